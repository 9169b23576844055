"""Width factor: a width is a whole part of another times a float field (``int(d * factor)``).

A constructor that scales a width by a float (the FT-Transformer's ``d_ffn = int(d_model *
d_ffn_factor)``, 4/3 by default) shows the float only through the width it makes. Where the
build's number ``b`` is ``int(w * x)`` (or ``round``, or the ceiling) for a float field's value
``x`` and another field's whole number ``w``, and the live number is ``live``, the float is
recovered from the ratio of the widths: the simplest fraction ``p / q`` (``q`` up to
``MAX_DENOMINATOR``) that makes ``live`` the same way, then ``live / w`` itself. Example: a block
``FFN(d_model=30, factor=4/3)`` built where the live one was given ``factor=1.7``: ``a`` is 40
wide against 51 live, and 51 / 30 is 17 / 10: ``factor`` 1.7.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from .problem import Problem, may_scale

__all__ = ["moves", "propose"]

MAX_DENOMINATOR = 12  # 4/3, 8/3, 5/4: the factors papers write; a ratio past it is live / w
MAX_PER_DIFF = 3

_ROUNDINGS: tuple[Callable[[float], int], ...] = (int, round, math.ceil)


def _ratios(w: int, live: int, made: Callable[[float], int]) -> Iterator[float]:
    for q in range(1, MAX_DENOMINATOR + 1):
        y = round(live * q / w) / q
        if y > 0 and made(w * y) == live:
            yield y
            break
    y = live / w
    if made(w * y) == live:
        yield y


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    floats = [
        f.name
        for f in p.fields
        if type(p.values.get(f.name)) is float
        and math.isfinite(p.values[f.name])
        and p.values[f.name] > 0
        and may_scale(f.name)
    ]
    yield from moves(p, floats, whole=True)


def moves(p: Problem, floats: list[str], whole: bool) -> Iterator[dict[str, Any]]:
    """The ratios that make each live width of ``p``'s difference from the fields ``floats``
    (``whole``: whole ratios too; ``whole_factor.py`` wants fractions only)."""
    if not floats:
        return
    values = {**p.seen, **p.values}
    widths = {v for v in values.values() if type(v) is int and v > 0}
    count = 0
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live or live <= 0:
            continue
        for name in floats:
            x = values[name]
            for w in sorted(widths):
                made = next((r for r in _ROUNDINGS if r(w * x) == b), None)
                if made is None:
                    continue
                for y in _ratios(w, live, made):
                    if y != x and (whole or not y.is_integer()):
                        yield {name: y}
                        count += 1
                        if count >= MAX_PER_DIFF:
                            return
