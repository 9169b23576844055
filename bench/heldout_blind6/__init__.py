from . import (  # noqa: F401  (fill REGISTRY)
    biosignal,
    classic_nlp,
    compression,
    course_cnns,
    geometry3d,
    inpainting,
    knowledge_tracing,
    mobile_cnns,
    sciml,
    separation,
    seq2seq_qa,
    vision_language,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
