from . import (  # noqa: F401  (fill REGISTRY)
    anomaly,
    crowd,
    depth,
    ebm,
    equivariant,
    fewshot,
    lidar,
    memory,
    nca,
    neural_process,
    reid,
    remote,
    reservoir,
    retrieval,
    sets,
    skeleton,
    sketch,
    trajectory,
    trees,
    tts,
    videopred,
)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
