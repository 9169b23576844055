"""A list read in consecutive pairs by zipping slices of it: each slice's loop variable is an item
at the slice's start.

``for a, b in zip(sizes[:-1], sizes[1:]): layers += [nn.Linear(a, b), act()]`` (and ``zip(dims,
dims[1:])``, the same in a comprehension) makes one layer per pair of neighbours: ``a`` is the
item at the loop's place, ``b`` the one after it. ``usage.py`` reads a bare name zipped as items
at offset 0; ``zipped`` gives a slice's loop variable its offset, the slice's start
(``sizes[1:]`` 1, ``sizes[:-1]`` 0), so that ``items.py`` joins the readings off the layers into
``[first.in_features, each.out_features, ...]``: n layers, n + 1 sizes. A slice with a step, a
start that is not a whole number, or one counted from the end (``sizes[-2:]``) says no place.
"""

from __future__ import annotations

import ast

__all__ = ["in_loop", "zipped"]


def _start(key: ast.Slice) -> int | None:
    if key.step is not None:
        return None
    if key.lower is None:
        return 0
    low = key.lower
    if isinstance(low, ast.Constant) and type(low.value) is int and low.value >= 0:
        return low.value
    return None


def zipped(sub: ast.Subscript, up: dict[ast.AST, ast.AST]) -> tuple[ast.AST, int] | None:
    """The loop variable a slice ``sub`` zipped in a loop's ``zip(...)`` is unpacked to, and the
    slice's start (the item's offset against the loop's place); None where it is not one."""
    call = up.get(sub)
    if not (
        isinstance(sub.slice, ast.Slice)
        and isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "zip"
        and not call.keywords
        and any(a is sub for a in call.args)
    ):
        return None
    loop = up.get(call)
    if not isinstance(loop, (ast.For, ast.comprehension)) or loop.iter is not call:
        return None
    at = next(i for i, a in enumerate(call.args) if a is sub)
    target, start = loop.target, _start(sub.slice)
    if not isinstance(target, ast.Tuple) or len(target.elts) != len(call.args) or start is None:
        return None
    return target.elts[at], start


def in_loop(loads: list[ast.Name], target: ast.AST, up: dict[ast.AST, ast.AST]) -> list[ast.Name]:
    """The loads of a loop variable inside the loop that binds it (``target``): two loops that
    name their variables alike (an encoder's ``for a, b in zip(...)`` and a decoder's) read
    their own items."""
    loop = up.get(target)
    while loop is not None and not isinstance(loop, (ast.For, ast.comprehension)):
        loop = up.get(loop)
    scope = up.get(loop) if isinstance(loop, ast.comprehension) else loop
    if scope is None:
        return loads
    out = []
    for load in loads:
        at: ast.AST | None = load
        while at is not None and at is not scope:
            at = up.get(at)
        if at is scope:
            out.append(load)
    return out
