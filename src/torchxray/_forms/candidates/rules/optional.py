"""Optional: a part or an attribute on one side only, or a container of another length, with no
value to read from it.

Each field is proposed what would add or remove a part: a flag its opposite, an optional field
None, an empty class field the live part's class, and every optional field its default. Example:
diffusers' ``Downsample2D(channels=8, use_conv=True)`` builds a ``conv`` where the live block
(``use_conv=False``) pools: ``use_conv`` False first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem, flag_like

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    if not (d.aspect == "module" or d.aspect.startswith("attr") or d.aspect == "children"):
        return
    present = p.target if d.live is not None else None
    for f in p.fields:
        v = p.values.get(f.name)
        if flag_like(f):
            yield {f.name: not v}
        elif v is not None and not f.required:
            yield {f.name: None}
        elif v is None and present is not None and f.kind in ("class", "callable"):
            yield {f.name: type(present)}
        if not f.required and v is not f.default and not flag_like(f):
            yield {f.name: f.default}
