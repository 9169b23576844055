from . import (  # noqa: F401  (fill REGISTRY)
    biosignal,
    classic_nlp,
    course_cnns,
    geometry3d,
    mobile_cnns,
    sciml,
    separation,
    seq2seq_qa,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
