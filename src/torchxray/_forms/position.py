"""A module's place in the container that holds it, for a parameter that names an index
(``stage_idx``, ``layer_index``): a stage built in a loop is often given its own number, and reads
per-stage lists of a config at it (its layers too: a stage's patch embedding). A module does not
know its parent: one scan of the live modules maps each child to its parent and key, again when a
module without a true place asks (``_forms/candidates.py``). A place is a fact about the model
now, not about the time of the scan: one is used only while the parent still holds the module
under that key (a module swapped out by an edit, or asked before it was put in, is scanned for
again), so a form does not depend on the forms opened before it."""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any

from torch import nn

from .config import is_config

__all__ = ["config_items", "index_like", "ordinals"]

_WORDS = frozenset({"idx", "index", "id", "num", "number", "i"})

# module -> (the module holding it, its key there), as the last scan found it; checked on use.
_places: weakref.WeakKeyDictionary[nn.Module, tuple[weakref.ref[nn.Module], str]] = (
    weakref.WeakKeyDictionary()
)
MAX_UP = 4
MAX_ITEMS = 6


def index_like(name: str) -> bool:
    """``stage_idx``, ``layer_index``, ``idx``, ``stage_num``; not ``num_heads`` (a count)."""
    words = name.lower().split("_")
    return len(words[-1]) > 0 and words[-1] in _WORDS and (len(words) > 1 or words[0] != "i")


def _scan() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance on deprecated proxies (torch.distributed)
        modules = [o for o in gc.get_objects() if isinstance(o, nn.Module)]
    _places.clear()
    for m in modules:
        if not _hashable(m):
            continue
        for key, child in m._modules.items():
            if child is not None and _hashable(child):
                _places[child] = (weakref.ref(m), key)


def _hashable(m: nn.Module) -> bool:
    """False for a module class made unhashable (``__eq__`` without ``__hash__``): it has no
    place, and the modules around it keep theirs."""
    try:
        hash(m)
    except TypeError:
        return False
    return True


def _place(module: nn.Module) -> tuple[nn.Module, str] | None:
    """(parent, key) while the parent still holds ``module`` there; None otherwise."""
    place = _places.get(module)
    parent = place[0]() if place is not None else None
    if parent is None or place is None or parent._modules.get(place[1]) is not module:
        return None
    return parent, place[1]


def ordinals(module: nn.Module) -> list[int]:
    """The keys of the numbered containers that hold the module or the layers around it,
    nearest first (a stage's patch embedding given the stage's number), then 0 and 1."""
    if not _hashable(module):
        return [0, 1]
    if _place(module) is None:
        _scan()  # a module nothing holds scans each time it asks: a container may take it later
    found: list[int] = []
    at = module
    for _ in range(MAX_UP):
        # Every module with a place is hashable: so is each parent found on the way up.
        place = _place(at)
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
