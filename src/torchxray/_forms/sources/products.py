"""Source: the widths a constructor hands its layers as products of its arguments, read from the AST.

A patch-based model's last layer is often as wide as a patch's values: DiT's ``nn.Linear(hidden,
patch_size * patch_size * out_channels)``, MAE's ``patch_size ** 2 * in_chans``; a grouped
layer's ``groups * width``. The live layer shows the product alone, so no rule that reads one
argument off one number finds its factors, and each factor moved alone builds a product that is
further off. ``products(params, code)`` reads each argument of a call whose layer ``self.X``
keeps that is a monomial of the parameters (``*``, ``**`` with a whole-number exponent, a
whole-number factor; a local name assigned once such a form is read through) of degree two or
more, as a ``Product`` (plain data, as every source hands the search); ``rules/factored.py`` solves it for one or two of its factors where the
build's width is the product's value and the live one another, and ``candidates/ambiguous.py``
tries its other factorizations: where the layers show the product alone, which factors were
passed is not known, and the values found are flagged as a guess.

Read conservatively, as ``sums.py`` reads sums: a division, a call (``int(d * r)``), a sum
inside the product or a name rebound more than once is no monomial, and nothing is read of it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .code import Code, kept_under

__all__ = ["Product", "products"]

_INLINED = 3  # local names followed into their single assignment, one inside another
_MAX_POWER = 4  # ``p ** 2``, ``s ** 3``: a larger exponent is no width anyone writes


@dataclass(frozen=True)
class Product:
    """``coef * prod(param ** power)`` handed to a layer ``self.<kept>`` keeps (or a layer
    inside it)."""

    kept: str
    factors: tuple[tuple[str, int], ...]  # (parameter, power), sorted by name
    coef: int

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.factors)


# Calls that compute a number rather than make a layer: ``int(dim * ratio)`` holds a float
# factor, read by ``rules/whole_factor.py`` and ``rounded_float.py``, not as a product.
_NUMERIC = frozenset({"int", "round", "float", "max", "min", "abs", "sum", "pow", "divmod"})


def _numeric(func: ast.AST) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _NUMERIC
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and (func.value.id in ("math", "np", "numpy"))
    )


Monomial = tuple[dict[str, int], int]


def _monomial(node: ast.AST, params: frozenset[str], code: Code, depth: int = 0) -> Monomial | None:
    """``node`` as ({parameter: power}, whole-number factor), or None where it is none."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {}, node.value
    if isinstance(node, ast.Name):
        if node.id in params:
            return {node.id: 1}, 1
        stored = code.stores.get(node.id, ())
        if len(stored) == 1 and depth < _INLINED:
            return _monomial(stored[0], params, code, depth + 1)
        return None
    if not isinstance(node, ast.BinOp):
        return None
    if isinstance(node.op, ast.Pow):
        exp = node.right
        if not (isinstance(exp, ast.Constant) and type(exp.value) is int):
            return None
        if not 1 <= exp.value <= _MAX_POWER:
            return None
        base = _monomial(node.left, params, code, depth)
        if base is None:
            return None
        return {n: p * exp.value for n, p in base[0].items()}, base[1] ** exp.value
    if not isinstance(node.op, ast.Mult):
        return None
    left = _monomial(node.left, params, code, depth)
    right = _monomial(node.right, params, code, depth)
    if left is None or right is None:
        return None
    powers = dict(left[0])
    for n, p in right[0].items():
        powers[n] = powers.get(n, 0) + p
    return powers, left[1] * right[1]


def products(params: frozenset[str], code: Code) -> tuple[Product, ...]:
    """The monomials of degree two or more of ``params`` that the function read as ``code``
    hands to the layers it keeps (see the module doc)."""
    out: dict[Product, None] = {}
    for node in ast.walk(code.tree):
        if not isinstance(node, ast.Call) or _numeric(node.func):
            continue
        kept = ""
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if not isinstance(arg, (ast.BinOp, ast.Name)):
                continue
            read = _monomial(arg, params, code)
            if read is None or sum(read[0].values()) < 2 or read[1] <= 0:
                continue
            kept = kept or kept_under(node, code.up)
            if kept:
                factors = tuple(sorted(read[0].items()))
                out[Product(kept, factors, read[1])] = None
    return tuple(out)
