"""Scaled float: a float attribute no field holds, derived as ``v * c``.

A float field ``v`` becomes ``v * live / built``. Example: timm's ``ScaledStdConv2d(gamma=...)``
keeps ``self.scale = gamma * fan_in ** -0.5``; a build with ``gamma=1.0`` gives ``gamma`` back.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem, may_scale

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
        if type(v) is float and v and may_scale(f.name):
            yield {f.name: v * live / b}
