"""Number pair: the built text holds ``b`` where the live one holds ``live``, at the same place.

A field whose value ``v`` relates to ``b`` is proposed what relates the same way to ``live``
(``_forms/candidates/rules/numbers.py``: ``v`` is ``b``, ``b = k * v``, ``b = v + k``, a grid's side, per tuple
element, strings and floats alike); an unset optional width the live number (``stem_chs=None``
defaulting to another). Example: ``nn.GroupNorm(32, 32)`` built where the live one is
``GroupNorm(8, 32)``: ``num_groups`` 32 -> 8; timm's ``Mlp(hidden_features=128)`` whose ``fc1``
is ``Linear(32, 64)`` live.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tuning import MAX_PER_DIFF
from .numbers import from_pair
from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    count = 0
    for b, lv in p.pairs:
        for f in p.fields:
            for x in from_pair(f, p.values.get(f.name), b, lv):
                yield {f.name: x}
                count += 1
            if p.values.get(f.name) is None and f.optional and f.kind == "int" and type(lv) is int:
                yield {f.name: lv}  # a width left to default to another (stem_chs=None)
        if count > MAX_PER_DIFF:
            break
