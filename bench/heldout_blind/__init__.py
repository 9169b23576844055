"""The blind held-out set (see `spec`): importing it fills REGISTRY."""

from . import audio, generative, graph, rl_misc, sequence, vision  # noqa: F401  (fill REGISTRY)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
