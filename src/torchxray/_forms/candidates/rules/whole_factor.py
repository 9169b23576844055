"""Whole factor: a whole number that only multiplies a width, moved to a fraction first.

A constructor that scales a width by an argument it tests for truth (RegNet-Y's ``if se_ratio:
SqueezeExcitation(w_b, max(1, int(round(w_in * se_ratio))))``, None by default) shows the
argument only through that width. The pools offer it whole numbers (1 turns the layer on), and
the build then makes the squeeze layer as wide as ``w_in``; the width rules would rather move
``w_in`` to the squeeze width, which breaks every other layer ``w_in`` makes, and the search stops
there. This rule reads that difference first: a field holding a whole number that the constructor
multiplies by another value (``Usage.scales``) and hands to no layer itself (a width would) is
proposed the fraction that makes the live width (``width_factor.moves``; whole ratios are the
number rules'). Example: ``se_ratio=1`` builds a 16-wide squeeze where the live one is 4 wide:
``se_ratio`` 0.25 (a guess where 0.2500x makes the same width, ``candidates/ambiguous.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem, may_scale
from .width_factor import moves

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    """The fractions that make the live width, for each whole number only multiplied."""
    names = [
        f.name
        for f in p.fields
        if type(v := p.values.get(f.name)) is int
        and v > 0
        and (u := p.uses.get(f.name)) is not None
        and u.scales
        and not (u.number or u.sequence or u.handed)
        and may_scale(f.name)
    ]
    yield from moves(p, names, whole=False)
