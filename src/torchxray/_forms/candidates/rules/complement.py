"""Complement: a number the constructor hands on as ``c - x``, read back as ``c - live``.

Research code often takes a rate as its complement and turns it round for the layer: a keep
probability handed to a dropout as its drop rate (``nn.Dropout(1 - keep_prob)``, matching
networks' and many TensorFlow ports' classifiers), a running-average decay handed to a batch norm
as its momentum (``momentum=1.0 - decay``). Where the built text holds ``b = c - v`` and the live
one ``live`` at the same place, the field is proposed ``c - live``. The shape is read off the
constructor's code and the helper methods it hands the field to (``self._block(n, n,
keep_prob)`` whose parameter may be named otherwise), so no other float field is moved by it. The
value is the shortest decimal that still gives ``live`` back (``1 - 0.09999999999999998`` is
``0.9``): a build proves it, and the live float holds no more digits than that.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
import types
from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["complements", "propose"]

_HOPS = 2  # helper methods followed one inside another


def _tree(fn: Any) -> ast.AST | None:
    """``fn``'s source parsed (read here, in the search's stage: a rule calls no source back)."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None


def _method(func: ast.AST, owner: type) -> tuple[Any, Any] | None:
    """The function behind ``self.name(...)`` of ``owner``'s own code and the callee whose
    signature the call meets (without ``self`` for a plain method)."""
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return None
    if func.value.id != "self":
        return None
    try:
        raw = inspect.getattr_static(owner, func.attr)
    except AttributeError:
        return None
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not isinstance(fn, types.FunctionType) or fn.__module__.startswith("torch."):
        return None
    return (fn, fn) if isinstance(raw, staticmethod) else (fn, types.MethodType(fn, owner))


def _minuends(fn: Any, names: frozenset[str], owner: type, hops: int) -> dict[str, set[float]]:
    """The constants ``c`` of each ``c - name`` in ``fn``'s code, per name; a name handed to a
    helper method of ``owner`` is followed into it under its parameter's name."""
    tree = _tree(fn)
    out: dict[str, set[float]] = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            left, right = node.left, node.right
            c = left.value if isinstance(left, ast.Constant) else None
            if type(c) in (int, float) and isinstance(right, ast.Name) and right.id in names:
                out.setdefault(right.id, set()).add(float(c))  # type: ignore[arg-type]
        elif isinstance(node, ast.Call) and hops > 0:
            found = _method(node.func, owner)
            if found is None:
                continue
            inner, callee = found
            try:
                bound = _bind(callee, node, names)
            except (TypeError, ValueError):
                continue
            if not bound:
                continue
            deeper = _minuends(inner, frozenset(bound), owner, hops - 1)
            for param, cs in deeper.items():
                out.setdefault(bound[param], set()).update(cs)
    return out


def _bind(callee: Any, call: ast.Call, names: frozenset[str]) -> dict[str, str]:
    """The helper's parameter names that receive one of ``names`` as a bare name."""
    params = [
        p.name
        for p in inspect.signature(callee).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    out: dict[str, str] = {}
    for i, a in enumerate(call.args):
        if isinstance(a, ast.Starred):
            break
        if isinstance(a, ast.Name) and a.id in names and i < len(params):
            out[params[i]] = a.id
    for k in call.keywords:
        if k.arg and isinstance(k.value, ast.Name) and k.value.id in names:
            out[k.arg] = k.value.id
    return out


@functools.lru_cache(maxsize=256)
def complements(owner: type) -> dict[str, tuple[float, ...]]:
    """Each constructor parameter handed on as ``c - x``: its constants ``c``."""
    init = owner.__dict__.get("__init__")
    if init is None:
        return {}
    try:
        names = frozenset(list(inspect.signature(init).parameters)[1:])
    except (TypeError, ValueError):
        return {}
    found = _minuends(init, names, owner, _HOPS)
    return {k: tuple(sorted(v)) for k, v in found.items()}


def _shortest(c: float, live: float) -> float:
    x = c - live
    for digits in range(1, 16):
        r = round(x, digits)
        if c - r == live:
            return r
    return x


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.owner is None:
        return
    table = complements(p.owner)
    if not table:
        return
    for b, lv in p.pairs:
        if type(lv) is not float or isinstance(b, bool) or not isinstance(b, (int, float)):
            continue
        for f in p.fields:
            v = p.values.get(f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            for c in table.get(f.name, ()):
                if math.isclose(c - v, b, rel_tol=1e-9, abs_tol=1e-12):
                    yield {f.name: _shortest(c, lv)}
