"""Numbered layers: a layer named with its number ``n`` (``convgru2``) that only the build has.

Every sequence field of at least ``n`` items (one per such layer: kernel sizes and paddings)
keeps its first ``n - 1``, all together (a constructor checks that their lengths agree), then
each alone (one sequence per kind of layer). A live layer held as Identity counts as none (a
layer made only when a width is given). Example: torchvision's RAFT ``RecurrentBlock`` built
with its default two kernel sizes and paddings makes a ``convgru2`` the live block
(``kernel_size=((1, 5),), padding=((0, 2),)``) lacks: both keep their first item.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]

_IDENTITY = "torch.nn.modules.linear.Identity"


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    added = d.aspect == "module" and d.live is None and d.built is not None
    if not added and not (d.aspect == "class" and d.live == _IDENTITY):
        return
    name = d.path.rsplit(".", 1)[-1]
    digits = len(name) - len(name.rstrip("0123456789"))
    if not digits or digits == len(name):
        return
    n = int(name[-digits:])
    if n < 2:
        return
    change = {
        f.name: v[: n - 1]
        for f in p.fields
        if isinstance(v := p.values.get(f.name), (tuple, list)) and len(v) >= n
    }
    if change:
        yield change
    for name, v in change.items() if len(change) > 1 else []:
        yield {name: v}
