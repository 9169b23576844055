"""An argument read through a name of the constructor's own: a function defined inside it, or a
local name it is assigned to and then called.

Research code builds a repeated stack in a small function written inside ``__init__`` (a
RealNVP coupling layer's ``def net(act): ... acts[act]() ...``; ``self.s = net(s_act)``), and
a helper picks one of two layer classes by a conditional before calling it (SpinningUp's ``act =
activation if j < n - 2 else output_activation; act()``). The module-level reader
(``usage.py``) follows neither: the nested function is no object its scope names, and the call
is made on another name. ``local_def`` names the parameter of the nested function a call hands
the argument to and where that function reads it (``usage.py`` then reads those loads as the
argument's own uses, kept under the attribute the call's result is assigned to); ``called_as``
says whether the argument is called under a local name it was assigned to (itself, or one
branch of a conditional expression), which makes it a factory (``Usage.called``), and
``always_called`` whether a helper function calls its parameter on every call (lucidrains'
``default(val, d)`` calls ``d`` only where it is callable: an int is as good).

And ``or_empty`` reads ``x or []`` (``for fc in shared_layers or []``) as ``x`` itself: the empty
literal only stands in for a None given.

Read conservatively: a nested function whose parameters a ``*args`` or a ``**kwargs`` gathers, a
call that spreads its arguments, and a local name assigned more than once are not followed.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any

from .code import Code, code_of, conditional

__all__ = ["always_called", "called_as", "local_def", "or_empty"]


def _def_named(code: Code, name: str) -> ast.FunctionDef | None:
    """The one function named ``name`` defined inside the constructor's own body."""
    found = [
        n
        for n in ast.walk(code.tree)
        if isinstance(n, ast.FunctionDef) and n.name == name and n is not code.tree
    ]
    return found[0] if len(found) == 1 else None


def _param_of(fdef: ast.FunctionDef, call: ast.Call, node: ast.AST) -> str | None:
    a = fdef.args
    if a.vararg or a.kwarg or any(isinstance(x, ast.Starred) for x in call.args):
        return None
    params = [p.arg for p in (*a.posonlyargs, *a.args)]
    if node in call.args:
        i = call.args.index(node)  # type: ignore[arg-type]
        return params[i] if i < len(params) else None
    names = {*params, *(p.arg for p in a.kwonlyargs)}
    for k in call.keywords:
        if k.value is node and k.arg in names:
            return k.arg
    return None


def local_def(call: ast.Call, node: ast.AST, code: Code) -> Code | None:
    """``code`` with the loads of the parameter of a function defined inside the constructor
    that ``call`` hands ``node`` to, under the name ``__local__`` (read as the argument's), or
    None where ``call`` reaches no such function."""
    if not isinstance(call.func, ast.Name):
        return None
    fdef = _def_named(code, call.func.id)
    if fdef is None or call.func.id in code.stores:
        return None
    param = _param_of(fdef, call, node)
    if param is None:
        return None
    inside = {id(n) for n in ast.walk(fdef)}
    loads = [n for n in code.loads.get(param, ()) if id(n) in inside]
    return dataclasses.replace(code, loads={**code.loads, "__local__": loads})


def _alias_calls(node: ast.AST, up: dict[ast.AST, ast.AST], code: Code) -> list[ast.Call]:
    """The calls of the local name ``node`` is assigned to, itself or as one branch of a
    conditional expression (``act = activation if last else output_activation; act()``)."""
    parent = up.get(node)
    while isinstance(parent, ast.IfExp) and node is not parent.test:
        node, parent = parent, up.get(parent)
    if not isinstance(parent, ast.Assign) or parent.value is not node:
        return []
    if len(parent.targets) != 1 or not isinstance(parent.targets[0], ast.Name):
        return []
    name = parent.targets[0].id
    if len(code.stores.get(name, ())) != 1:
        return []
    return [
        c
        for load in code.loads.get(name, ())
        if isinstance(c := up.get(load), ast.Call) and c.func is load
    ]


def called_as(node: ast.AST, up: dict[ast.AST, ast.AST], code: Code) -> bool:
    """Whether ``node`` (the argument) is called under a local name it is assigned to (see
    ``_alias_calls``)."""
    return bool(_alias_calls(node, up, code))


def always_called(fn: Callable[..., Any], param: str) -> bool:
    """Whether a helper function calls its parameter on every call, itself or under a local
    name: not under an ``if`` (``d() if callable(d) else d`` takes a value of any kind)."""
    code = code_of(fn)
    if code is None:
        return False
    for load in code.loads.get(param, ()):
        call = code.up.get(load)
        calls = [call] if isinstance(call, ast.Call) and call.func is load else []
        calls += _alias_calls(load, code.up, code)
        if any(not conditional(c, code.up) for c in calls):
            return True
    return False


def or_empty(node: ast.AST, up: dict[ast.AST, ast.AST]) -> tuple[ast.AST, ast.AST | None]:
    """``x or []`` (``()``, ``{}``) as ``x``: the expression that stands for the argument and
    its parent, or ``node`` and its own where it is no such default."""
    parent = up.get(node)
    if (
        isinstance(parent, ast.BoolOp)
        and isinstance(parent.op, ast.Or)
        and len(parent.values) == 2
        and parent.values[0] is node
        and isinstance(empty := parent.values[1], (ast.List, ast.Tuple, ast.Dict))
        and not (empty.keys if isinstance(empty, ast.Dict) else empty.elts)
    ):
        return parent, up.get(parent)
    return node, parent
