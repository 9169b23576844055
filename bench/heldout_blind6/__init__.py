from . import biosignal, course_cnns, mobile_cnns, separation  # noqa: F401  (fill REGISTRY)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
