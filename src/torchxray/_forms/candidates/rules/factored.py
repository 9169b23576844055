"""Factored: a layer's width is a product of arguments (``patch_size * patch_size *
out_channels``) the build holds wrong in one or two of them.

``_forms/sources/products.py`` reads the product off the AST. Where the build's number at a layer
that ``self.<kept>`` holds is the product's value at the current values and the live number is
another, each searched factor is solved for alone, the others kept, then each two together
(the factorizations of what the others leave, the ones without a factor of 1 first, up to
``_SOLUTIONS``). Example:
DiT's ``FinalLayer(32, 2, 4)`` (a Linear 16 wide) drafted with ``patch_size`` 16 and
``out_channels`` 64: 16 = 2 * 2 * 4 = 4 * 4 * 1 = 1 * 1 * 16, all three tried. Which one was
passed the layer does not show: ``candidates/ambiguous.py`` tries the other factorizations
(``refactored``) and flags the values found as a guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from ...sources.products import Product
from .problem import Problem, handed_at

__all__ = ["propose", "refactored", "solutions", "value"]

_SOLUTIONS = 12  # factorizations tried for one pair of factors (a width has few divisors)


def value(s: Product, values: Mapping[str, Any], free: tuple[str, ...] = ()) -> int | None:
    """The product at ``values``, leaving out the factors ``free`` (None where one of the
    others holds no whole number)."""
    total = s.coef
    for name, power in s.factors:
        if name in free:
            continue
        v = values.get(name)
        if type(v) is not int:
            return None
        total *= v**power
    return total


def _root(n: int, power: int) -> int | None:
    """The whole ``power``-th root of ``n`` above 0, or None."""
    if n <= 0:
        return None
    r = round(n ** (1 / power))
    for c in (r - 1, r, r + 1):
        if c > 0 and c**power == n:
            return c
    return None


def _pairs(n: int, pa: int, pb: int) -> Iterator[tuple[int, int]]:
    """Every (x, y) of positive whole numbers with ``x ** pa * y ** pb == n``: over the divisors
    ``d`` of ``n`` (``x ** pa``), a whole root of ``d`` and of ``n / d``."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    for d in dict.fromkeys([*small, *(n // d for d in reversed(small))]):
        x, y = _root(d, pa), _root(n // d, pb)
        if x is not None and y is not None:
            yield x, y


def solutions(
    s: Product, live: int, values: Mapping[str, Any], movable: Mapping[str, Any]
) -> Iterator[dict[str, int]]:
    """Values of one, then two, of the ``movable`` factors (the others kept) that make the
    product ``live``, positive whole numbers only; for two, the pairs with no factor of 1
    first (``patch_size`` 2 and ``out_channels`` 4 before 1 and 16)."""
    power = dict(s.factors)
    names = [n for n in power if n in movable and type(values.get(n)) is int]
    for name in names:
        rest = value(s, values, (name,))
        if rest and live % rest == 0:
            root = _root(live // rest, power[name])
            if root is not None and root != values[name]:
                yield {name: root}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            rest = value(s, values, (a, b))
            if not rest or live % rest:
                continue
            pairs = sorted(_pairs(live // rest, power[a], power[b]), key=lambda xy: (1 in xy, xy))
            for x, y in pairs[:_SOLUTIONS]:
                if (x, y) != (values[a], values[b]):
                    yield {a: x, b: y}


def refactored(s: Product, values: Mapping[str, Any], moved: set[str]) -> Iterator[dict[str, int]]:
    """Other values of two of the product's factors (one the search moved) that keep its value:
    ``patch * patch * out`` at (2, 4) gives (1, 16) and (4, 1)."""
    total = value(s, values)
    if total is None or total <= 0:
        return
    names = [n for n, _ in s.factors]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if not ({a, b} & moved):
                continue
            pair = {a: values[a], b: values[b]}
            for change in solutions(s, total, {**values, a: 0, b: 0}, pair):
                if len(change) == 2 and change != pair:
                    yield change


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if not p.uses or p.diff.aspect == "children":
        return
    found: list[Product] = handed_at(p, Product)
    if not found:
        return
    values = {**p.seen, **p.values}
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live or live <= 0:
            continue
        for s in found:
            if value(s, values) == b:
                yield from solutions(s, live, values, p.values)
