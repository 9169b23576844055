"""Scaled float: a float attribute no field holds, derived as ``v * c``.

A float field ``v`` becomes ``v * live / built`` (``scale = gamma * fan_in ** -0.5``). Example: a
layer that keeps ``self.scale = init_scale * dim ** -0.5`` as a float attribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    if not d.aspect.startswith("attr ") or d.live is None or d.built is None:
        return
    try:
        live, b = float(d.live), float(d.built)
    except ValueError:
        return
    if not b or live == b or "." not in d.live or any(p.values.get(f.name) == b for f in p.fields):
        return
    for f in p.fields:
        v = p.values.get(f.name)
        if type(v) is float and v and "drop" not in f.name:
            yield {f.name: v * live / b}
