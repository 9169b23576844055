"""The second blind held-out set (see `spec`): importing it fills REGISTRY."""

from . import (  # noqa: F401  (fill REGISTRY)
    dense,
    diffusion,
    dit,
    flows,
    forecasting,
    nlp,
    recsys,
    science,
    selfsup,
    speech,
    textgen,
    timeseries,
    volumetric,
    wrappers,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
