"""Depth: a container of ``b`` blocks where the live one holds ``live``.

A depth field at ``b`` moves to ``live`` together with one rate per block (a rate or None kept for
a per-block list makes every deeper build fail). Example: timm's ``ConvNeXtStage(depth=3,
drop_path_rates=None)`` against a live stage of 2 blocks proposes ``depth=2,
drop_path_rates=[0.0, 0.0]``. Tried before the one-field changes: a depth alone fails to build.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.diff.aspect != "children":
        return
    for b, live in p.pairs:
        for f in p.fields:
            if type(p.values.get(f.name)) is not int or p.values[f.name] != b or "drop" in f.name:
                continue
            for g in p.fields:
                v = p.values.get(g.name)
                listed = "list" in g.annotation.lower() or "sequence" in g.annotation.lower()
                if g is f or not ("drop" in g.name or listed) or isinstance(v, bool):
                    continue
                if v is None or isinstance(v, (int, float)):
                    for rate in dict.fromkeys((float(v or 0.0), 0.0)):
                        yield {f.name: live, g.name: [rate] * live}
