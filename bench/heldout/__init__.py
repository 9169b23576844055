"""The held-out set of hand-written models (issue 58, item 4): see `bench.heldout.spec`.

`REGISTRY` lists every `Spec`; nobody develops a rule on these models, they measure generality.
"""

from . import configs, fields, other, sequence, statespace, vision  # noqa: F401  (fill REGISTRY)
from .spec import REGISTRY, Spec

__all__ = ["REGISTRY", "Spec"]
