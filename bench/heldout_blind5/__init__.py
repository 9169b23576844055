"""The fifth blind held-out set (see spec.py)."""

from . import (  # noqa: F401  (fill REGISTRY)
    dense_heads,
    detection,
    diffusion,
    forecast_transformers,
    gans,
    metric,
    multitask,
    odd_layers,
    recognition,
    recsys,
    selfsup,
    speech,
    timeseries,
    video,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
