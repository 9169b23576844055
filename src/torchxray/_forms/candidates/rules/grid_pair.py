"""Grid pair: a count of patches the build shows is ``(h / p) * (w / p)`` (plus a class token)
of a field the constructor unpacks into two sides (``h, w = pair(image_size)``).

Where the build holds ``b`` and the live module ``live``, the field's sides ``(h, w)`` (an int
``s`` is ``(s, s)``) give the patch's area ``p ** 2 = h * w / (b - extra)``; every pair of whole
multiples of ``p`` whose patches number ``live - extra`` is proposed, the squarest first (a
square grid is ``number_pair``'s). Only the count is known: the sides may swap or trade factors,
so the form flags the value found where another rebuilds as exactly (``ambiguous.py``). Example:
a ViT written from scratch, ``ViT(image_size=(16, 24), patch_size=8)``, built with
``image_size=16``: a position embedding of 5 where the live one has 7.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]

MAX_SIDES = 4  # factor pairs proposed per difference, the squarest first


def _sides(v: Any) -> tuple[int, int] | None:
    if type(v) is int and v > 0:
        return v, v
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(type(x) is int and x > 0 for x in v):
        return v[0], v[1]
    return None


def pairs(h: int, w: int, b: int, live: int) -> Iterator[tuple[int, int]]:
    """Sides ``(H, W)`` whose patches number ``live`` where ``(h, w)``'s number ``b``."""
    for extra in (1, 0):
        n, m = b - extra, live - extra
        if n < 1 or m < 1 or (h * w) % n:
            continue
        p = math.isqrt(h * w // n)
        if p * p * n != h * w or h % p or w % p:
            continue
        factors = [(a, m // a) for a in range(1, m + 1) if m % a == 0]
        factors.sort(key=lambda f: (abs(f[0] - f[1]), f[0] > f[1]))
        for a, c in factors[:MAX_SIDES]:
            yield a * p, c * p


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live:
            continue
        for f in p.fields:
            u = p.uses.get(f.name)
            sides = _sides(p.values.get(f.name))
            if u is None or u.unpacked != 2 or sides is None:
                continue
            for hw in pairs(*sides, b, live):
                yield {f.name: hw if hw[0] != hw[1] else hw[0]}
