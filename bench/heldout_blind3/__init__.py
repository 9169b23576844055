"""The third blind held-out set (see `spec`): importing it fills REGISTRY."""

from . import (  # noqa: F401  (fill REGISTRY)
    backbones,
    exotic,
    metric,
    music,
    perception,
    restoration,
    video,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
