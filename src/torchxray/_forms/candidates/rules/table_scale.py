"""Table scale: a float field multiplies widths no field holds (a constant, a table's items),
each rounded to a multiple (``_make_divisible(c * width_mult, 8)``).

A mobile network's constructor keeps its widths in a table of its own (``[t, c, n, s]`` rows, a
stem of 32) and scales each by a float before rounding it. The float shows only through the
widths it makes, and no field holds the number it multiplies, so ``width_factor.py`` (a field's
whole number times the float) reads nothing. Where the build's width ``b`` was made with the
float at ``x`` and the live one is ``live``, the float is about ``x * live / b``: the simplest
fraction near it (``q`` up to ``MAX_DENOMINATOR``: the 0.5, 0.75, 1.4 that papers write) first,
then the ratio itself. Rounding to a multiple makes the ratio approximate: a wrong try is
refused by the rebuild, and a float a hair away that rebuilds as exactly is flagged by the
settling (``ambiguous.py``). Only a float the constructor multiplies by another value
(``Usage.scales``) that it hands to no layer itself, and only for a width no field's whole
number times the float makes (that is ``width_factor.py``'s: a ViT block's ``int(dim *
mlp_ratio)``, where a fused gate doubles the width and the ratio alone would mislead). Example: a MobileNetV2 built with
``width_mult`` 1.0 (a 32-wide stem) against a live 16-wide one: ``width_mult`` 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from .problem import Problem, may_scale
from .width_factor import _ROUNDINGS

__all__ = ["propose"]

MAX_DENOMINATOR = 20  # 0.35, 0.75, 1.4: the multipliers papers write; past it, the ratio itself
MAX_PER_DIFF = 2


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    names = [
        f.name
        for f in p.fields
        if type(x := p.values.get(f.name)) is float
        and math.isfinite(x)
        and x > 0
        and (u := p.uses.get(f.name)) is not None
        and u.scales
        and not u.handed
        and may_scale(f.name)
    ]
    if not names:
        return
    values = {**p.seen, **p.values}
    widths = {v for v in values.values() if type(v) is int and v > 0}
    count = 0
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live or b <= 0 or live <= 0:
            continue
        for name in names:
            x = p.values[name]
            if any(r(w * x) == b for w in widths for r in _ROUNDINGS):
                continue  # a field's width times the float: ``width_factor.py`` reads it
            ratio = x * live / b
            simple = float(Fraction(ratio).limit_denominator(MAX_DENOMINATOR))
            for y in dict.fromkeys((simple, ratio)):
                if y > 0 and y != x:
                    yield {name: y}
                    count += 1
                    if count >= MAX_PER_DIFF:
                        return
