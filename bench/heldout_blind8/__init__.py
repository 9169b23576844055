"""The eighth blind held-out set (see spec.py for its record)."""

from . import (  # noqa: F401  (fill REGISTRY)
    control,
    document,
    dynamic,
    forecasting,
    graphs,
    music,
    recsys,
    retrieval_av,
    science,
    speech,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
