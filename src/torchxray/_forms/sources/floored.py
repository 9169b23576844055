"""Source: the widths a constructor hands its layers through floor divisions of its arguments,
read from the AST.

A speech model's subsampling convolutions shrink the feature axis, and the projection after them
is as wide as what is left: ``nn.Linear(d * (((n_mels - 1) // 2 - 1) // 2), d)``; a strided
stack's flattened size (``c * (size // 4) ** 2``) is the same. No rule that reads one argument
off one number inverts such a width, and ``sums.py`` and ``products.py`` read no division.
``floored(params, code)`` reads each argument of a call whose layer ``self.X`` keeps that is a
whole-number expression of the parameters (``+``, ``-``, ``*``, ``//``, ``**`` with a small
whole exponent, whole constants; a local name assigned once such an expression is read
through) holding at least one ``//``, as a ``Floored``: the attribute, the names and the
expression (its source, plain data; evaluated by walking its tree, never ``eval``). ``rules/floored.py`` solves it for one argument by
evaluating it where the build's width is its value and the live one another; a floor division
maps neighbours to one width, which ``candidates/ambiguous.py`` then flags.

Read conservatively, as ``sums.py`` reads sums: a call, a true division or a name rebound more
than once is no such expression, and nothing is read of it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .code import Code, kept_under

__all__ = ["Floored", "floored"]

_INLINED = 3  # local names followed into their single assignment, one inside another
_MAX_POWER = 4
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Pow)


@dataclass(frozen=True)
class Floored:
    """A whole-number expression of ``names`` with a floor division, handed to a layer
    ``self.<kept>`` keeps (or a layer inside it)."""

    kept: str
    names: tuple[str, ...]
    expr: str  # the expression's source, local names read through

    def value(self, values: Mapping[str, Any]) -> int | None:
        """The expression at ``values`` (None where a name holds no whole number, or it
        divides by zero)."""
        if any(type(values.get(n)) is not int for n in self.names):
            return None
        try:
            return _evaluate(_parsed(self.expr), values)
        except (ZeroDivisionError, ValueError, OverflowError):
            return None


_CACHE: dict[str, ast.expr] = {}


def _parsed(text: str) -> ast.expr:
    """The expression ``text`` holds, parsed once (and walked by ``_evaluate``, never ``eval``)."""
    if text not in _CACHE:
        _CACHE[text] = ast.parse(text, mode="eval").body
    return _CACHE[text]


def _evaluate(node: ast.expr, values: Mapping[str, Any]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        return int(values[node.id])
    if not isinstance(node, ast.BinOp):
        raise ValueError(ast.dump(node))
    a, b = _evaluate(node.left, values), _evaluate(node.right, values)
    if isinstance(node.op, ast.Add):
        return a + b
    if isinstance(node.op, ast.Sub):
        return a - b
    if isinstance(node.op, ast.Mult):
        return a * b
    if isinstance(node.op, ast.FloorDiv):
        return a // b
    if not 0 <= b <= _MAX_POWER:
        raise ValueError(b)
    return int(a**b)


def _inline(
    node: ast.AST, params: frozenset[str], code: Code, names: set[str], depth: int = 0
) -> ast.expr | None:
    """``node`` with local names read through, or None where it is no such expression."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return ast.Constant(node.value)
    if isinstance(node, ast.Name):
        if node.id in params:
            names.add(node.id)
            return ast.Name(node.id)
        stored = code.stores.get(node.id, ())
        if len(stored) == 1 and depth < _INLINED:
            return _inline(stored[0], params, code, names, depth + 1)
        return None
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, _OPS):
        return None
    if isinstance(node.op, ast.Pow) and not (
        isinstance(node.right, ast.Constant) and type(node.right.value) is int
    ):
        return None
    left = _inline(node.left, params, code, names, depth)
    right = _inline(node.right, params, code, names, depth)
    if left is None or right is None:
        return None
    return ast.BinOp(left, node.op, right)


def _floor(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv)


def floored(params: frozenset[str], code: Code) -> tuple[Floored, ...]:
    """The expressions with a floor division of ``params`` that the function read as ``code``
    hands to the layers it keeps (see the module doc)."""
    out: dict[Floored, None] = {}
    for node in ast.walk(code.tree):
        if not isinstance(node, ast.Call):
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if not isinstance(arg, (ast.BinOp, ast.Name)):
                continue
            names: set[str] = set()
            expr = _inline(arg, params, code, names)
            if expr is None or not names:
                continue
            if not any(_floor(n) for n in ast.walk(expr)):
                continue
            kept = kept_under(node, code.up)
            if kept:
                out[Floored(kept, tuple(sorted(names)), ast.unparse(expr))] = None
    return tuple(out)
