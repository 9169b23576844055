"""A module's place in the container that holds it, for a parameter that names an index
(``stage_idx``, ``layer_index``): a stage built in a loop is often given its own number, and reads
per-stage lists of a config at it (its layers too: a stage's patch embedding). A module does not
know its parent: a scan of the live modules finds it (``_forms/sources/scan.py``, which says how long a
place is kept and when it is checked)."""

from __future__ import annotations

from typing import Any

from torch import nn

from ..configs import is_config
from .scan import LIVE, hashable

__all__ = ["config_items", "index_like", "ordinals"]

_WORDS = frozenset({"idx", "index", "id", "num", "number", "i"})

MAX_UP = 4
MAX_ITEMS = 6


def index_like(name: str) -> bool:
    """``stage_idx``, ``layer_index``, ``idx``, ``stage_num``; not ``num_heads`` (a count)."""
    words = name.lower().split("_")
    return len(words[-1]) > 0 and words[-1] in _WORDS and (len(words) > 1 or words[0] != "i")


def ordinals(module: nn.Module) -> list[int]:
    """The keys of the numbered containers that hold the module or the layers around it,
    nearest first (a stage's patch embedding given the stage's number), then 0 and 1."""
    if not hashable(module):
        return [0, 1]
    LIVE.placed(module)  # scans again where the kept place no longer holds
    found: list[int] = []
    at = module
    for _ in range(MAX_UP):
        # Every module with a place is hashable: so is each parent found on the way up.
        place = LIVE.place(at)
        if place is None:
            break
        at, key = place
        if key.isdigit():
            found.append(int(key))
    return list(dict.fromkeys([*found, 0, 1]))


def config_items(module: nn.Module, name: str) -> list[Any]:
    """The items of the per-stage list the module's own config holds under ``name``
    (``config.down_ops``, ``config.hidden_sizes``), the one at the module's place first: a stage
    given ``config.hidden_sizes[idx]`` keeps the config, not the number."""
    config = module.__dict__.get("config")
    seq = getattr(config, name, None) if is_config(config) else None
    if not isinstance(seq, (list, tuple)) or len(seq) < 2:
        return []
    places = [i for i in ordinals(module) if i < len(seq)]
    return [seq[i] for i in dict.fromkeys([*places, *range(len(seq))])][:MAX_ITEMS]
