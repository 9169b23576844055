"""Derived widths: a number the build derives from a few fields, moved together.

For each (built ``b``, live) pair of whole numbers: ``b = W / v`` (head_dim = dim / num_heads),
``b = w * r`` (mlp hidden = dim * mlp_ratio), ``b = v + w`` (a gate's input and hidden widths side
by side), a field at ``b`` moved while a ratio takes up the factor (``mid = in_chs * exp_ratio``),
and one width per layer where the module kept one of them (``out_chs`` as a pair); the relations
are in ``_forms/candidates/rules/numbers.py``. Only for the first differences (``FIRST_DIFFS_MOVED``), and not for
a container's count of blocks (a depth, ``depth.py``). Example: timm's ``Attention(dim=64,
num_heads=8)`` whose live ``head_dim`` is 16: ``num_heads`` 8 -> 4.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tuning import FIRST_DIFFS_MOVED
from .numbers import keeping, product, quotient, summed
from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.index >= FIRST_DIFFS_MOVED or p.diff.aspect == "children":
        return
    fields, values = p.fields, p.values
    for b, lv in p.pairs:
        if type(b) is not int or type(lv) is not int or not lv:
            continue
        yield from quotient(fields, values, b, lv, p.seen)
        yield from product(fields, values, b, lv, p.seen)
        yield from summed(fields, values, b, lv, p.seen)
        for f in fields:
            if type(values.get(f.name)) is int and values[f.name] == b:
                yield from keeping(fields, values, f.name, b, lv)
        for f in fields:
            if values.get(f.name) == b and type(b) is type(values[f.name]):
                # One width per layer where the module kept one of them (out_chs[-1]).
                if f.kind in ("int", "int_or_tuple"):
                    yield from ({f.name: (lv, b)}, {f.name: (b, lv)})
