"""Branches: the layers ``__init__`` makes only under a truth test of one argument.

A hand-written constructor often picks its last layer by a flag: ``if outermost_linear:
final = nn.Linear(hidden, out)`` else a ``SineLayer(hidden, out)``; ``self.head = nn.Linear(d,
n) if head else nn.Identity()``. The flag shows nowhere but in which layer was made, and the
widths that layer was handed are read nowhere else either: flipping the flag alone, with the
widths still wrong, builds a worse module than before, so a search that keeps only better
builds never keeps it (``rules/branch_layer.py`` moves them together). ``branches(cls)`` reads,
once per class, every call of a ``nn.Module`` class under ``if x:`` / ``if not x:`` / ``a if x
else b`` of a parameter ``x``: the truth that makes the call run, and which of the callee's
parameters each argument handed by name becomes (``nn.Linear(hidden, out)``: in_features is
``hidden``, out_features ``out``), so the live layer's own attributes give their values.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Any

from torch import nn

from ..._signature import original
from .code import bound, code_of, param_names, resolved

__all__ = ["Branch", "branches", "tested"]


@dataclass(frozen=True)
class Branch:
    """A layer of class ``callee`` made only where the argument ``flag`` is ``taken`` (its truth);
    ``widths``: (callee's parameter, the constructor's argument handed to it by name)."""

    flag: str
    taken: bool
    callee: type
    widths: tuple[tuple[str, str], ...]


def _tested(test: ast.AST, params: frozenset[str]) -> tuple[str, bool] | None:
    """The parameter a test takes as a truth and the truth that passes it: ``x`` (x, True),
    ``not x`` (x, False); None for any other test (a comparison names no truth)."""
    truth = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truth = test.operand, not truth
    if isinstance(test, ast.Name) and test.id in params:
        return test.id, truth
    return None


def _made(
    nodes: list[ast.AST], flag: str, taken: bool, params: frozenset[str], scope: dict[str, Any]
) -> list[Branch]:
    out: list[Branch] = []
    for top in nodes:
        for node in ast.walk(top):
            if not isinstance(node, ast.Call):
                continue
            callee = resolved(node.func, scope)
            if not (isinstance(callee, type) and issubclass(callee, nn.Module)):
                continue
            handed = [*node.args, *(k.value for k in node.keywords if k.arg is not None)]
            widths: list[tuple[str, str]] = []
            for a in handed:
                if isinstance(a, ast.Name) and a.id in params and a.id != flag:
                    at = bound(node, a, callee)
                    if at is not None and at[1] == -1:
                        widths.append((at[0], a.id))
            out.append(Branch(flag, taken, callee, tuple(widths)))
    return out


@functools.lru_cache(maxsize=512)
def branches(cls: type) -> tuple[Branch, ...]:
    """Every layer ``cls.__init__`` makes under a truth test of one of its parameters (see the
    module doc); () where its source cannot be read."""
    init = original(cls.__init__)  # type: ignore[misc]
    code = code_of(init)
    if code is None:
        return ()
    params = frozenset(param_names(init)) - {"self"}
    out: list[Branch] = []
    for node in ast.walk(code.tree):
        if not isinstance(node, (ast.If, ast.IfExp)):
            continue
        test = _tested(node.test, params)
        if test is None:
            continue
        flag, truth = test
        body = node.body if isinstance(node, ast.If) else [node.body]
        orelse = node.orelse if isinstance(node, ast.If) else [node.orelse]
        out += _made(list(body), flag, truth, params, code.scope)
        out += _made(list(orelse), flag, not truth, params, code.scope)
    return tuple(out)


@functools.lru_cache(maxsize=512)
def tested(cls: type) -> frozenset[str]:
    """The parameters ``cls.__init__`` reads only inside the tests of ``if``s, conditional
    expressions, ``while``s and ``assert``s (``if i % every == 0``, ``x if i >= start else y``,
    ``assert img_h % 16 == 0``, which no part shows at all): such a number
    shows only in which layers are made, may rebuild the module alike at other values, and the
    settling tries its neighbours (``candidates/ambiguous.py``). Not one also read elsewhere (a
    ``stride`` tested and given to a conv): its layers show it. Empty where the source cannot be
    read."""
    init = original(cls.__init__)  # type: ignore[misc]
    code = code_of(init)
    if code is None:
        return frozenset()
    params = frozenset(param_names(init)) - {"self"}
    inside: set[int] = set()
    for node in ast.walk(code.tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            inside |= {id(n) for n in ast.walk(node.test)}
    loads = [n for n in ast.walk(code.tree) if isinstance(n, ast.Name) and n.id in params]
    seen = {n.id for n in loads if id(n) in inside}
    elsewhere = {n.id for n in loads if id(n) not in inside}
    return frozenset(seen - elsewhere)
