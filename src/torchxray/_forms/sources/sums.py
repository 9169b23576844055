"""Source: the widths a constructor hands its layers as linear sums of its arguments, read from the AST.

A hand-written constructor often joins several inputs into one width: Bahdanau's attention takes
``nn.Linear(enc_hid_dim * 2 + dec_hid_dim, dec_hid_dim)``, its decoder's GRU ``nn.GRU(enc_hid_dim
* 2 + emb_dim, dec_hid_dim)``. Such a width names no single argument, so the number rules never
move the one it is wrong in. ``sums(params, code)`` reads every argument of a call whose layer a
``self.X`` keeps that is a linear form of the parameters (``+``, ``-``, a whole-number factor, a
constant; a local name assigned once such a form, ``d_in = emb + 2 * enc``, is read through) as a
``Sum``: the attribute, the coefficients, the constant (an item of a list literal handed to the
call is read as an argument: ``mlp([obs_dim + act_dim] + list(hidden), act)``). ``rules/linear_sum.py`` solves it for one
argument where the build's width is the sum's value and the live one another.

Read conservatively: a division, a call (``int(x * f)``), a name rebound more than once or a
product of two names is no linear form, and nothing is read of it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .code import Code, kept_under

__all__ = ["Sum", "sums"]

_INLINED = 3  # local names followed into their single assignment, one inside another


@dataclass(frozen=True)
class Sum:
    """``sum(coef * param) + const`` handed to a layer ``self.<kept>`` keeps (or a layer inside
    it: ``self.net = nn.Sequential(nn.Linear(a + b, c))``)."""

    kept: str
    coefs: tuple[tuple[str, int], ...]
    const: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.coefs)

    def value(self, values: Mapping[str, Any]) -> int | None:
        """The sum at ``values`` (None where one of its parameters holds no whole number)."""
        total = self.const
        for name, coef in self.coefs:
            v = values.get(name)
            if type(v) is not int:
                return None
            total += coef * v
        return total


Linear = tuple[dict[str, int], int]


def _linear(node: ast.AST, params: frozenset[str], code: Code, depth: int = 0) -> Linear | None:
    """``node`` as (coefficients, constant), or None where it is no linear form of ``params``."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {}, node.value
    if isinstance(node, ast.Name):
        if node.id in params:
            return {node.id: 1}, 0
        stored = code.stores.get(node.id, ())
        if len(stored) == 1 and depth < _INLINED:
            return _linear(stored[0], params, code, depth + 1)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _linear(node.operand, params, code, depth)
        return None if inner is None else ({k: -c for k, c in inner[0].items()}, -inner[1])
    if not isinstance(node, ast.BinOp):
        return None
    left = _linear(node.left, params, code, depth)
    right = _linear(node.right, params, code, depth)
    if left is None or right is None:
        return None
    if isinstance(node.op, (ast.Add, ast.Sub)):
        sign = 1 if isinstance(node.op, ast.Add) else -1
        coefs = dict(left[0])
        for k, c in right[0].items():
            coefs[k] = coefs.get(k, 0) + sign * c
        return {k: c for k, c in coefs.items() if c}, left[1] + sign * right[1]
    if isinstance(node.op, ast.Mult):
        if left[0] and right[0]:
            return None  # a product of two arguments: no linear form
        named, times = (left[0], right[1]) if left[0] else (right[0], left[1])
        return {n: c * times for n, c in named.items() if c * times}, left[1] * right[1]
    return None


def _items(args: list[ast.expr]) -> list[ast.expr]:
    """The arguments, a list or tuple literal's items in place of it, lists joined with ``+``
    too: SpinningUp's ``mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)`` hands
    its first layer the sum at the list's start."""
    out: list[ast.expr] = []
    for a in args:
        if isinstance(a, (ast.List, ast.Tuple)):
            out += _items(a.elts)
        elif isinstance(a, ast.BinOp) and isinstance(a.op, ast.Add) and _joined(a):
            out += _items([a.left, a.right])
        else:
            out.append(a)
    return out


def _joined(op: ast.BinOp) -> bool:
    """``[a + b] + list(x)``: a list literal on one side makes ``+`` a join of lists."""
    return any(
        isinstance(s, (ast.List, ast.Tuple)) or isinstance(s, ast.BinOp) and _joined(s)
        for s in (op.left, op.right)
    )


def sums(params: frozenset[str], code: Code) -> tuple[Sum, ...]:
    """The linear sums of ``params`` that the function read as ``code`` hands to the layers it keeps (see the module
    doc): the bare parameter (``nn.Linear(d, d)``) is none; a sum, a multiple or a shift is."""
    out: dict[Sum, None] = {}
    for node in ast.walk(code.tree):
        if not isinstance(node, ast.Call):
            continue
        kept = ""
        for arg in _items([*node.args, *(k.value for k in node.keywords)]):
            if (
                not isinstance(arg, (ast.BinOp, ast.UnaryOp, ast.Name))
                or isinstance(arg, ast.Name)
                and arg.id in params
            ):
                continue
            read = _linear(arg, params, code)
            if read is None or not read[0]:
                continue
            coefs, const = read
            if len(coefs) == 1 and const == 0 and next(iter(coefs.values())) == 1:
                continue  # a name for the parameter itself
            kept = kept or kept_under(node, code.up)
            if kept:
                out[Sum(kept, tuple(sorted(coefs.items())), const)] = None
    return tuple(out)
