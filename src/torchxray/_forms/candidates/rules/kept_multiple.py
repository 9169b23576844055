"""Kept multiple: a field the number is a multiple of moves while another keeps a width both
derive.

The relation of ``kept_width.py`` one step removed: the built number ``b`` is ``k`` times a
field's value ``v`` (a bottleneck's output ``planes * 4``), the live one ``live`` is ``k`` times
``live / k``, and the inner width that field also feeds is a product with another (``planes *
width_per_group // 64 * groups``), right in the build. ``v`` alone moved to ``live / k`` breaks
the inner width; here another whole-number field takes up the factor, ``w * v / (live / k)``
(``rules/numbers.py``'s ``keeping``), and ``b = v / k`` alike. Read after ``kept_width.py`` over
every difference (the registry's ``last`` scope reads each rule over all of them before the
next), for the first differences only (``FIRST_DIFFS_MOVED``), at most ``MAX_PAIR_MOVES`` per
difference. Example: a ResNeXt-style block built with ``planes=2, width_per_group=64`` (output
8, inner 4) against a live one of ``planes=16, width_per_group=8`` (output 64, inner 4):
``planes`` 16 with ``width_per_group`` 8.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tuning import FIRST_DIFFS_MOVED, MAX_PAIR_MOVES
from .numbers import keeping
from .problem import Problem

__all__ = ["propose"]


def _multiples(v: int, b: int, live: int) -> Iterator[int]:
    """What ``v`` becomes where ``b = k * v`` or ``b = v / k`` holds for ``live`` too."""
    if b % v == 0 and b // v > 1 and live % (b // v) == 0:
        yield live // (b // v)
    if v % b == 0 and v // b > 1:
        yield live * (v // b)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.index >= FIRST_DIFFS_MOVED or p.diff.aspect == "children":
        return
    seen: list[dict[str, Any]] = []
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b <= 0 or live <= 0 or b == live:
            continue
        for f in p.fields:
            v = p.values.get(f.name)
            if type(v) is not int or v <= 0 or v == b or "drop" in f.name:
                continue
            for x in _multiples(v, b, live):
                for change in keeping(p.fields, p.values, f.name, v, x):
                    if len(change) < 2 or change in seen:
                        continue  # one field alone is the number rules' move
                    seen.append(change)
                    yield change
                    if len(seen) >= MAX_PAIR_MOVES:
                        return
