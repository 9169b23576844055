"""What a scan of the process's live objects (``gc``) finds about a module that a module does not
know itself: the container that holds it and its key there (``_forms/sources/position.py``: a stage given
its own number), and the configs of the models around it (``_forms/sources/pools.py``: a
transformers model holds its config; its layers are often given it without keeping it).

One owner, ``LIVE``, and its lifetime: the process. A scan costs a walk over every object of the
process (0.12-0.17 s of CPU with six models alive, measured on 2 shared CPUs), most of a form's
search budget (``_forms/candidates/tuning.py``), so it is not made again for every form: its findings are
kept, weakly keyed (a module that goes takes its entries with it), and checked on use.

- A place is a fact about the model now, not about the time of the scan: one is used only while
  the parent still holds the module under that key; a module swapped out by an edit, or asked
  before it was put in, is scanned for again, so a form does not depend on the forms opened
  before it.
- The configs around a module are kept from the scan that found them (nearest container first).
"""

from __future__ import annotations

import gc
import warnings
import weakref
from typing import Any

from torch import nn

from ..configs import is_config

__all__ = ["LIVE", "LiveScan", "hashable"]


def hashable(m: nn.Module) -> bool:
    """False for a module class made unhashable (``__eq__`` without ``__hash__``): it has no
    place, and the modules around it keep theirs."""
    try:
        hash(m)
    except TypeError:
        return False
    return True


def _modules() -> list[nn.Module]:
    # By type(), not isinstance(): isinstance reads an object's __class__, which a dead
    # weakref.proxy answers with ReferenceError (a process's gc holds such proxies: a form
    # opened after them raised) and a deprecated torch.distributed proxy with a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [o for o in gc.get_objects() if issubclass(type(o), nn.Module)]


class LiveScan:
    """The places and the configs around modules, as scans of the live objects found them."""

    def __init__(self) -> None:
        # module -> (the module holding it, its key there), as the last scan found it.
        self._places: weakref.WeakKeyDictionary[nn.Module, tuple[weakref.ref[nn.Module], str]] = (
            weakref.WeakKeyDictionary()
        )
        # module -> configs of the models holding it, nearest first.
        self._holders: weakref.WeakKeyDictionary[nn.Module, list[Any]] = weakref.WeakKeyDictionary()

    def _scan_places(self) -> None:
        modules = _modules()
        self._places.clear()
        for m in modules:
            if not hashable(m):
                continue
            for key, child in m._modules.items():
                if child is not None and hashable(child):
                    self._places[child] = (weakref.ref(m), key)

    def place(self, module: nn.Module) -> tuple[nn.Module, str] | None:
        """(parent, key) while the parent still holds ``module`` there; None otherwise."""
        place = self._places.get(module)
        parent = place[0]() if place is not None else None
        if parent is None or place is None or parent._modules.get(place[1]) is not module:
            return None
        return parent, place[1]

    def placed(self, module: nn.Module) -> tuple[nn.Module, str] | None:
        """``place``, scanning again first where the kept one no longer holds (a module nothing
        holds scans each time it asks: a container may take it later)."""
        if self.place(module) is None:
            self._scan_places()
        return self.place(module)

    def holding_configs(self, module: nn.Module) -> list[Any]:
        """Configs of the live modules that contain ``module``, smallest container first."""
        if module in self._holders:
            return self._holders[module]
        holders = [m for m in _modules() if is_config(m.__dict__.get("config"))]
        found: dict[nn.Module, list[tuple[int, Any]]] = {}
        for h in holders:
            subs = list(h.modules())
            for s in subs:
                found.setdefault(s, []).append((len(subs), h.__dict__["config"]))
        for s, pairs in found.items():
            self._holders[s] = [c for _, c in sorted(pairs, key=lambda p: p[0])]
        return self._holders.get(module, [])


LIVE = LiveScan()
