"""Item runs: one pair per layer (``kernel_size=((1, 5), (5, 1))``).

An item the build's numbers show in a row (a conv's ``(1, 5)``) becomes the live numbers at the
same place. Example: torchvision's RAFT ``RecurrentBlock(kernel_size=((1, 5), (5, 1)))`` built
with ``((1, 3), (3, 1))``: the conv reads ``kernel_size=(1, 3)`` where the live one has ``(1, 5)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem, numbers

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    if d.live is None or d.built is None or d.aspect == "children":
        return
    built, live = numbers(d.built), numbers(d.live)
    if len(built) != len(live):
        return
    for f in p.fields:
        v = p.values.get(f.name)
        if not isinstance(v, tuple) or not v or not all(_int_tuple(x) for x in v):
            continue
        for i, x in enumerate(v):
            for j in range(len(built) - len(x) + 1):
                new = tuple(live[j : j + len(x)])
                if tuple(built[j : j + len(x)]) == x and new != x and _int_tuple(new):
                    yield {f.name: (*v[:i], new, *v[i + 1 :])}


def _int_tuple(x: Any) -> bool:
    return isinstance(x, tuple) and bool(x) and all(type(n) is int for n in x)
