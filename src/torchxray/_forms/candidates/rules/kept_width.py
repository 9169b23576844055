"""Kept width: a field moves to the live value while another field keeps a width both derive.

A constructor often derives one width from two arguments, a product (a grouped block's ``width =
planes * base_width // 64 * groups``) or a sum (a recursive block's ``nf = f + increase``). Where
the build is right in that width and wrong in one of the two (a layer's ``groups=2`` missing; the
input width 12 where the live one is 8), moving that one alone breaks the width, so the search
never reaches the pair: here the field named by the difference moves to the live value and one
other whole-number field takes up the change, ``v * b / live`` for a product, ``v + (b - live)``
for a sum. The field moved is the one a ``name=value`` item names (``groups`` for ``groups=2``,
``rules/problem.py``'s ``named``) or, for a number the build holds where the live one holds
another (an attribute ``groups`` 1 against 2, whatever the field is called), each field holding
that number. Tried only where the search would otherwise stop (the registry's ``last`` scope:
``_forms/candidates/loop.py``'s ``paired``), for the first differences only
(``FIRST_DIFFS_MOVED``), at most ``MAX_PAIR_MOVES`` per difference. Example: a
ResNeXt-style ``Bottleneck(8, 8, groups=1, base_width=16)`` against a live one built with
``groups=2, base_width=8`` (the same 2 channels, its 3x3 grouped): ``groups`` 2, ``base_width`` 8.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeGuard

from ...field import Field
from ..tuning import FIRST_DIFFS_MOVED, MAX_PAIR_MOVES
from .numbers import keeping
from .problem import Problem, named

__all__ = ["propose"]


def _whole(v: Any) -> TypeGuard[int]:
    return type(v) is int  # not a flag


def shifted(
    fields: Sequence[Field], values: Mapping[str, Any], name: str, b: int, live: int
) -> Iterator[dict[str, Any]]:
    """``name`` goes from ``b`` to ``live`` while a width derived as a sum (``f + increase``)
    stays: another whole-number field takes up ``b - live``."""
    for f in fields:
        v = values.get(f.name)
        if f.name == name or not _whole(v) or "drop" in f.name:
            continue
        if v + (b - live) >= 0:
            yield {name: live, f.name: v + (b - live)}


def _moves(p: Problem) -> Iterator[dict[str, Any]]:
    kw = p.keyword
    if kw is not None and _whole(kw[1]):
        key, live = kw
        for f in p.fields:
            v = p.values.get(f.name)
            if named(f, key) and _whole(v) and v != live and v > 0 and live > 0:
                yield from _kept(p, f.name, v, live)
    for b, live in p.pairs:
        if not _whole(b) or not _whole(live) or b == live or b <= 0 or live <= 0:
            continue
        for f in p.fields:
            if _whole(p.values.get(f.name)) and p.values[f.name] == b and "drop" not in f.name:
                yield from _kept(p, f.name, b, live)


def _kept(p: Problem, name: str, v: int, x: int) -> Iterator[dict[str, Any]]:
    yield from keeping(p.fields, p.values, name, v, x)
    yield from shifted(p.fields, p.values, name, v, x)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.index >= FIRST_DIFFS_MOVED or p.diff.aspect == "children":
        return
    seen: list[dict[str, Any]] = []
    for change in _moves(p):
        # Both fields move: one alone is the rules before this one's (``keeping`` also yields a
        # single move for an unset width).
        if len(change) < 2 or change in seen:
            continue
        seen.append(change)
        yield change
        if len(seen) >= MAX_PAIR_MOVES:
            return
