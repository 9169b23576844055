"""Source: a number a constructor keeps only through one step of arithmetic with a constant
(``self.factor = 1.0 / vel_resize``, ``self.scale = dim ** -0.5``, ``self.half = k // 2``),
read back by undoing that step on the kept value; and the whole numbers it compares an
argument with (``if ndims == 2: ... elif ndims == 3:``), which choose what it keeps; and a depth turned into
a count of blocks by a floor division (``n = (depth - 4) // 6``: Wide-ResNet's, a CIFAR
ResNet's ``(depth - 2) // 6``), read back from the lengths of the module's stacks
(``counted_back``: 16 for stages of 2 blocks).

Nothing keeps such an argument under its own name and no layer is handed it, so no other source
has a candidate; the step read off the AST (one ``BinOp`` of the argument and a constant,
assigned to ``self.X``) turns the attribute's value back into the argument's. Each is a
candidate only: a build proves it (a floor division or a rounding loses digits, and a
neighbour that keeps the same value is the settling's to flag, ``candidates/ambiguous.py``).
"""

from __future__ import annotations

import ast
import functools
import math
import types
from collections.abc import Callable
from typing import Any

from torch import nn

from .code import code_of, is_name
from .layout import lengths

__all__ = ["compared_ints", "counted_back", "inverted"]

_NUMBER = (int, float)


def _undo(op: ast.operator, c: float, arg_left: bool) -> Callable[[float], float] | None:
    """The step that gives the argument back from ``arg op c`` (or ``c op arg``)."""
    if isinstance(op, ast.Add):
        return lambda v: v - c
    if isinstance(op, ast.Sub):
        return (lambda v: v + c) if arg_left else (lambda v: c - v)
    if isinstance(op, ast.Mult) and c:
        return lambda v: v / c
    if isinstance(op, ast.Div):
        return (lambda v: v * c) if arg_left else (lambda v: c / v)
    if isinstance(op, ast.Pow) and arg_left and c:
        return lambda v: v ** (1.0 / c)
    if isinstance(op, ast.Pow) and not arg_left and c > 0 and c != 1:
        return lambda v: math.log(v, c)
    return None


@functools.lru_cache(maxsize=256)
def _steps(cls: type, name: str) -> tuple[tuple[str, Callable[[float], float]], ...]:
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None or name in code.stores:
        return ()
    out: list[tuple[str, Callable[[float], float]]] = []
    for load in code.loads.get(name, ()):
        op = code.up.get(load)
        stmt = code.up.get(op) if op is not None else None
        if not (
            isinstance(op, ast.BinOp)
            and isinstance(stmt, ast.Assign)
            and stmt.value is op
            and len(stmt.targets) == 1
            and isinstance(t := stmt.targets[0], ast.Attribute)
            and is_name(t.value, "self")
        ):
            continue
        other = op.right if op.left is load else op.left
        c = other.value if isinstance(other, ast.Constant) else None
        if not isinstance(c, _NUMBER) or isinstance(c, bool):
            continue
        undo = _undo(op.op, float(c), op.left is load)
        if undo is not None:
            out.append((t.attr, undo))
    return tuple(out)


def _round(v: float) -> list[float | int]:
    """A whole number where ``v`` is one to the float's last digits (2 for 2.0000000000000004),
    else ``v``."""
    near = round(v)
    return [near, v] if abs(v - near) <= 1e-9 * max(1.0, abs(v)) else [v]


def inverted(cls: type, module: nn.Module, name: str) -> list[Any]:
    """The values of ``name`` that give back what ``module`` keeps from one step of arithmetic
    with a constant on it (see the module doc), a whole number first; [] where it keeps none."""
    out: list[Any] = []
    try:
        steps = _steps(cls, name)
    except (TypeError, ValueError, RecursionError):
        return out
    for attr, undo in steps:
        kept = module.__dict__.get(attr)
        if not isinstance(kept, _NUMBER) or isinstance(kept, bool):
            continue
        try:
            v = undo(float(kept))
        except (ArithmeticError, ValueError):
            continue
        if math.isfinite(v):
            out += [x for x in _round(v) if x not in out]
    return out


@functools.lru_cache(maxsize=256)
def compared_ints(cls: type, name: str) -> tuple[int, ...]:
    """The whole numbers ``cls.__init__`` compares its parameter ``name`` with by equality
    (``ndims == 2``, ``n in (1, 2)``), in the order the code reads them."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None:
        return ()
    out: dict[int, None] = {}
    for load in code.loads.get(name, ()):
        cmp = code.up.get(load)
        if not isinstance(cmp, ast.Compare) or not all(
            isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for o in cmp.ops
        ):
            continue
        for side in [cmp.left, *cmp.comparators]:
            items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            for x in items:
                if isinstance(x, ast.Constant) and type(x.value) is int:
                    out.setdefault(x.value, None)
    return tuple(out)


def _count_step(value: ast.AST, name: str) -> tuple[int, int] | None:
    """(``c``, ``k``) where ``value`` is ``(name - c) // k``, ``name // k`` or ``int((name - c)
    / k)`` with whole-number literals (``k`` of 2 or more)."""
    if (
        isinstance(value, ast.Call)
        and is_name(value.func, "int")
        and len(value.args) == 1
        and isinstance(value.args[0], ast.BinOp)
        and isinstance(value.args[0].op, ast.Div)
    ):
        value = value.args[0]
    elif not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.FloorDiv)):
        return None
    k = value.right.value if isinstance(value.right, ast.Constant) else None
    if type(k) is not int or k < 2:
        return None
    left, c = value.left, 0
    if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Sub):
        shift = left.right.value if isinstance(left.right, ast.Constant) else None
        if type(shift) is not int:
            return None
        left, c = left.left, shift
    return (c, k) if is_name(left, name) else None


@functools.lru_cache(maxsize=256)
def _counts(cls: type, name: str) -> tuple[tuple[int, int], ...]:
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None:
        return ()
    found = (_count_step(v, name) for values in code.stores.values() for v in values)
    return tuple(dict.fromkeys(f for f in found if f is not None))


def counted_back(cls: type, module: nn.Module, name: str) -> list[int]:
    """Values of ``name`` that a count of blocks ``(name - c) // k`` made into the lengths of
    the module's stacks (``c + k * n`` for each length ``n``, the one above too: a stage made
    as ``[stride] + [1] * (n - 1)`` holds one block for n = 0 and 1); [] where no such count."""
    try:
        steps = _counts(cls, name)
    except (TypeError, ValueError, RecursionError):
        return []
    if not steps:
        return []
    seen = list(dict.fromkeys(lengths(module)))
    out = [c + k * n for c, k in steps for m in seen for n in (m, m + 1)]
    return list(dict.fromkeys(v for v in out if v > 0))
