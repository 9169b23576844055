"""Source: an argument that is one value or a dict of one per part (``activation="tanh"``, or
``{"branch": "relu", "trunk": "tanh"}``), read back off the layers each part's value went to.

DeepXDE-style constructors test the kind of such an argument (``isinstance(activation, dict)``)
and read it by its keys in one branch, binding each key's value to a name handed to a layer:
``act_b, act_t = activation["branch"], activation["trunk"]``, then ``self.branch = FNN(sizes,
act_b)``. Nothing keeps the dict. ``per_key(cls, module, name, form)`` reads those bindings and
the layer each name went to, and gives the dict whose every key holds the value that layer's
own exact form found for the parameter it was handed as. The search's rebuild proves it. Where
every part holds one value, the plain value is offered instead (what a person most likely
passed), and ``alike`` gives it with the dict to the settling, which flags the one found
(``candidates/ambiguous.py``): the dict rebuilds as exactly.

Read conservatively: only string keys bound to plain names (or in a tuple assignment of as
many), each name handed to a layer class kept under an attribute, and every key found.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable
from typing import Any

from torch import nn

from ..values import same
from .code import Code, bound, code_of, kept_under, resolved

__all__ = ["alike", "offered", "per_key"]


def _bound_name(sub: ast.Subscript, up: dict[ast.AST, ast.AST]) -> str:
    """The local name ``x[k]`` is bound to (``a = x[k]``, ``a, b = x[k], x[j]``), "" else."""
    at = up.get(sub)
    if isinstance(at, ast.Assign) and len(at.targets) == 1 and at.value is sub:
        t = at.targets[0]
        return t.id if isinstance(t, ast.Name) else ""
    outer = up.get(at) if isinstance(at, ast.Tuple) else None
    if isinstance(outer, ast.Assign) and len(outer.targets) == 1 and outer.value is at:
        t = outer.targets[0]
        items = at.elts if isinstance(at, ast.Tuple) else []
        if isinstance(t, ast.Tuple) and len(t.elts) == len(items):
            e = t.elts[items.index(sub)]
            return e.id if isinstance(e, ast.Name) else ""
    return ""


def _handed(code: Code, local: str) -> list[tuple[str, str]]:
    """(attribute kept under, parameter) of each layer class the name ``local`` is handed to."""
    out: list[tuple[str, str]] = []
    for load in code.loads.get(local, ()):
        call = code.up.get(load)
        if isinstance(call, ast.keyword):
            call = code.up.get(call)
        if not isinstance(call, ast.Call) or call.func is load:
            continue
        callee = resolved(call.func, code.scope)
        if not (isinstance(callee, type) and issubclass(callee, nn.Module)):
            continue
        got = bound(call, local, callee)
        kept = kept_under(call, code.up)
        if got is not None and got[1] < 0 and kept:
            out.append((kept, got[0]))
    return out


def per_key(
    cls: type, module: nn.Module, name: str, form: Callable[[nn.Module], Any] | None
) -> dict[str, Any] | None:
    """The dict of one value per key ``name`` most likely held (see the module doc), or None."""
    init = cls.__dict__.get("__init__")
    if form is None or not isinstance(init, types.FunctionType):
        return None
    code = code_of(init)
    if code is None:
        return None
    out: dict[str, Any] = {}
    for load in code.loads.get(name, ()):
        sub = code.up.get(load)
        if not (
            isinstance(sub, ast.Subscript)
            and sub.value is load
            and isinstance(sub.slice, ast.Constant)
            and isinstance(sub.slice.value, str)
        ):
            continue
        key, local = sub.slice.value, _bound_name(sub, code.up)
        for kept, param in _handed(code, local) if local else ():
            layer = getattr(module, kept, None)
            if not isinstance(layer, nn.Module):
                continue
            try:
                f = form(layer)
            except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
                return None
            got = next((x for x in f.fields if x.name == param), None)
            if f.inexact or got is None:
                return None
            out.setdefault(key, got.value)
        if key not in out:
            return None
    return out or None


def offered(parts: dict[str, Any] | None) -> Any:
    """What the search tries first: the plain value where every part holds one, else the dict."""
    if not parts:
        return None
    values = list(parts.values())
    return values[0] if all(same(v, values[0]) for v in values) else parts


def alike(
    cls: type, module: nn.Module, name: str, form: Callable[[nn.Module], Any] | None
) -> list[Any]:
    """[the plain value, the dict] where every part holds one value (both rebuild alike), []
    else."""
    parts = per_key(cls, module, name, form)
    plain = offered(parts)
    return [plain, parts] if parts and plain is not parts else []
