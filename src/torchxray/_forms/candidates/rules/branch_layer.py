"""Branch layer: a layer the build lacks, or made of another class, that ``__init__`` makes only
under a flag, moved together with the widths that layer was handed.

``if outermost_linear: nn.Linear(hidden_features, out_features) else SineLayer(hidden_features,
out_features)``: where the live model's last layer is an ``nn.Linear`` and the search stands at
``outermost_linear=False`` with ``out_features`` still wrong, flipping the flag alone builds a
``Linear`` of the wrong width, no better than before, and ``out_features`` alone leaves the class
wrong: neither is ever kept. One move sets both: the flag to the truth that makes the live layer's
class (``_forms/sources/branches.py`` reads the branch), and each argument the call hands by
name to the live layer's own attribute of that parameter (``in_features`` 64 is
``hidden_features``, ``out_features`` 3 is ``out_features``). The move is an ``Opening``: where
the layer sits among blocks counted by another field, it scores no better until that count
moves too, and the search looks one step past it (``loop.py``'s ``paired``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...sources.branches import branches
from ...values import same
from .problem import Opening, Problem, flag_like

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    present = d.aspect == "class" or (d.aspect == "module" and d.live is not None)
    if not present or p.target is None or p.owner is None:
        return
    live_cls = type(p.target)
    by_name = {f.name: f for f in p.fields}
    seen: list[dict[str, Any]] = []
    for b in branches(p.owner):
        f = by_name.get(b.flag)
        if b.callee is not live_cls or f is None:
            continue
        v = p.values.get(b.flag)
        if not (flag_like(f) or v is None) or (v is not None and bool(v) is b.taken):
            continue  # a value that is no flag, or one that already takes this branch
        change: dict[str, Any] = {b.flag: b.taken}
        for param, arg in b.widths:
            width = getattr(p.target, param, None)
            if arg in by_name and type(width) is int and not same(width, p.values.get(arg)):
                change[arg] = width
        if len(change) > 1 and change not in seen:
            seen.append(change)
            yield Opening(change)
