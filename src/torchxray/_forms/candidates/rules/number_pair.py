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


def _holds(v: Any, b: Any) -> bool:
    """Whether ``v`` is a sequence that holds the built number as an item (a field that is
    the number itself keeps its place: the fields' order was tuned on library classes)."""
    if isinstance(b, bool) or type(b) is not int:
        return False
    return isinstance(v, (tuple, list)) and any(type(x) is int and x == b for x in v)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    count = 0
    for b, lv in p.pairs:
        # The sequences that hold the built number as an item first (``dims`` (32, 8, 32)
        # where a stage's conv has 8 channels, live 48): the difference names their item; a
        # number a field relates to through a factor or an offset (``alpha`` 4 for 8 = 2 * 4)
        # after them. Many fields of small numbers would otherwise spend the guided tries.
        named = [f for f in p.fields if _holds(p.values.get(f.name), b)]
        for f in [*named, *(f for f in p.fields if f not in named)]:
            for x in from_pair(f, p.values.get(f.name), b, lv):
                yield {f.name: x}
                count += 1
            if p.values.get(f.name) is None and f.optional and f.kind == "int" and type(lv) is int:
                yield {f.name: lv}  # a width left to default to another (stem_chs=None)
        if count > MAX_PER_DIFF:
            break
