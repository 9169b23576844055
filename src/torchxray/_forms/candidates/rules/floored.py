"""Floored: a layer's width is an expression of arguments through floor divisions, the build's
wrong in one of them.

A constructor that shrinks an axis by strided layers hands the layer after them what is left
(``_forms/sources/floored.py`` reads it off the AST: a Conformer's ``nn.Linear(d * (((n_mels -
1) // 2 - 1) // 2), d)``). Where the build's number at a layer that ``self.<kept>`` holds is the
expression's value at the current values and the live number is another, each argument is
solved for alone, the others kept, by evaluating the expression at whole numbers from 1 up to
``MAX_VALUE``: those that give the live number, the nearest to its value first, ``MAX_SOLUTIONS``
at most. Example: a Conformer built with ``n_mels`` 80 (the projection 912 wide at ``d`` 48)
where the live one is 432 wide: ``n_mels`` 39 to 42 all give 9 frames of 48; the nearest, 42,
is proposed first, and as its neighbours rebuild it alike ``candidates/ambiguous.py`` flags it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...sources.floored import Floored
from .problem import Problem, handed_at

__all__ = ["propose"]

MAX_VALUE = 4096  # an argument past this is no size a layer is built from here
MAX_SOLUTIONS = 2  # each costs a build; the floor's neighbours are alike anyway


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if not p.uses or p.diff.aspect == "children":
        return
    found: list[Floored] = handed_at(p, Floored)
    if not found:
        return
    values = {**p.seen, **p.values}
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live:
            continue
        for s in found:
            if s.value(values) != b:
                continue  # the number is not this expression's
            for name in s.names:
                v = values.get(name)
                if name not in p.values or type(v) is not int:
                    continue
                hits = [
                    x
                    for x in range(1, MAX_VALUE + 1)
                    if x != v and s.value({**values, name: x}) == live
                ]
                for x in sorted(hits, key=lambda x: abs(x - v))[:MAX_SOLUTIONS]:
                    yield {name: x}
