from . import equivariant, memory, nca, reservoir, sets  # noqa: F401  (fill REGISTRY)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
