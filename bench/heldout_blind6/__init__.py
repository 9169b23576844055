from . import (  # noqa: F401  (fill REGISTRY)
    biosignal,
    classic_nlp,
    compression,
    course_cnns,
    geometry3d,
    inpainting,
    knowledge_tracing,
    mesh_weather,
    mobile_cnns,
    nas_meta,
    sciml,
    separation,
    seq2seq_qa,
    vision_language,
    world_models,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
