from . import (  # noqa: F401  (fill REGISTRY)
    anomaly,
    crowd,
    depth,
    equivariant,
    fewshot,
    memory,
    nca,
    reid,
    reservoir,
    retrieval,
    sets,
    skeleton,
    videopred,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
