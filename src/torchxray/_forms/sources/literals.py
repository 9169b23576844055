"""The strings a constructor compares a parameter with: the values a string field can take.

``if block_type == 'proj'``, ``assert downsample_type in ('avg', 'conv1x1', '')``: read with
``ast`` from the constructor's source and from the functions and classes it hands the parameter
to (``create_shortcut(downsample, ...)``, a ``**kwargs`` entry it pops), a few calls deep, with
the values of a string enum it is converted to (``Format(fmt)``); then the strings the class's
source file compares that name with anywhere (``cfg.rel_pos_type == "mlp"`` in a block the
class builds), read through ``linecache`` so that a notebook cell's code counts too. A string
field keeps no attribute the search could read, and no other candidate names a mode the code
knows.
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import linecache
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from ..._signature import original, resolve, source_tree
from .helpers import local_dict, method_of, stores_of

__all__ = ["compared_strings", "source_tree"]

DEPTH = 3  # calls followed from the constructor
MAX_STRINGS = 12


def _code(obj: Any) -> tuple[Callable[..., Any], int] | None:
    """The function whose source says what ``obj`` does with its arguments, and how many
    leading parameters a call does not pass (``self``)."""
    if isinstance(obj, type):
        # Through a decorator that replaced it (``torchxray._signature``).
        init = original(obj.__dict__.get("__init__"))
        return (init, 1) if isinstance(init, types.FunctionType) else None
    fn = original(obj) if callable(obj) else None
    return (fn, 0) if isinstance(fn, types.FunctionType) else None


def _is(node: ast.AST, name: str) -> bool:
    """``name`` itself, or a method of it that keeps its text (``name.lower()``)."""
    if isinstance(node, ast.Name):
        return node.id == name
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("lower", "upper", "strip", "casefold")
        and _is(node.func.value, name)
    )


def _texts(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _texts(e)


def _callee(node: ast.expr, scope: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        return scope.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner = scope.get(node.value.id)
        if isinstance(owner, types.ModuleType):
            return getattr(owner, node.attr, None)
    return None


def _keys(node: ast.expr, scope: dict[str, Any], tree: ast.AST | None = None) -> Iterator[str]:
    """The string keys of a module-level dict the parameter is looked up in, or of a dict
    literal a local name holds (``pads = {"reflect": ...}``, ``helpers.py``)."""
    local = local_dict(node, stores_of(tree)) if tree is not None else node
    if isinstance(local, ast.Dict):
        yield from (
            k.value for k in local.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        )
        return
    table = scope.get(node.id) if isinstance(node, ast.Name) else None
    if isinstance(table, dict):
        yield from (k for k in table if isinstance(k, str))


def _lookup(call: ast.Call, name: str) -> bool:
    f = call.func
    return (
        isinstance(f, ast.Attribute)
        and f.attr == "get"
        and bool(call.args)
        and _is(call.args[0], name)
    )


def _passed(call: ast.Call, name: str, target: Callable[..., Any], skip: int) -> str | None:
    """The parameter of ``target`` that ``call`` hands ``name`` to."""
    try:
        params = list(resolve(target).parameters.values())[skip:]
    except (TypeError, ValueError):
        return None
    for i, a in enumerate(call.args):
        if _is(a, name) and i < len(params) and params[i].kind <= params[i].POSITIONAL_OR_KEYWORD:
            return params[i].name
    for k in call.keywords:
        if k.arg is not None and _is(k.value, name) and any(p.name == k.arg for p in params):
            return k.arg
    spread = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    for k in call.keywords:
        if k.arg is not None and spread is not None and _is(k.value, name):
            return _taken(target, spread, k.arg)
    return None


def _taken(fn: Callable[..., Any], spread: str, key: str) -> str | None:
    """The name ``fn`` binds a keyword of its ``**spread`` to (``padding =
    kwargs.pop('padding', '')``)."""
    tree = source_tree(fn)
    for node in ast.walk(tree) if tree is not None else []:
        if not (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)):
            continue
        v = node.value
        if (
            isinstance(v, ast.Call)
            and isinstance(v.func, ast.Attribute)
            and v.func.attr in ("pop", "get")
            and isinstance(v.func.value, ast.Name)
            and v.func.value.id == spread
            and v.args
            and isinstance(v.args[0], ast.Constant)
            and v.args[0].value == key
        ):
            return node.targets[0].id
    return None


def _enum_of(call: ast.Call, name: str, scope: dict[str, Any]) -> type[enum.Enum] | None:
    """The enum class ``call`` converts ``name`` to (``Format(fmt)``), if it is one."""
    kind = _callee(call.func, scope)
    if isinstance(kind, type) and issubclass(kind, enum.Enum) and call.args:
        return kind if _is(call.args[0], name) else None
    return None


def _strings(
    fn: Callable[..., Any], name: str, depth: int, seen: set[Any], owner: type | None = None
) -> Iterator[str]:
    if (fn, name) in seen:
        return
    seen.add((fn, name))
    tree = source_tree(fn)
    if tree is None:
        return
    scope = getattr(fn, "__globals__", {})
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is(s, name) for s in sides):
                for s in sides:
                    yield from _texts(s)
                    yield from _keys(s, {}, tree)  # x in pads, a local dict literal
        elif isinstance(node, ast.Subscript) and _is(node.slice, name):
            yield from _keys(node.value, scope, tree)  # KERNELS[kernel], pads[kernel]
        elif isinstance(node, ast.Call) and _lookup(node, name):
            yield from _keys(typing.cast(ast.Attribute, node.func).value, scope)  # D.get(name)
        elif isinstance(node, ast.Call) and _enum_of(node, name, scope) is not None:
            # Format(fmt): the values of the string enum it is converted to.
            kind = typing.cast(type[enum.Enum], _enum_of(node, name, scope))
            yield from (m.value for m in kind if isinstance(m.value, str))
        elif isinstance(node, ast.Call) and depth < DEPTH:
            # a function or class it is handed to, or a helper method of the class's own
            method = method_of(node.func, owner)
            # a bound method's first parameter (self, cls) is not among the call's arguments
            skip = 0 if method is None or method[0] is method[1] else 1
            code = (method[0], skip) if method else _code(_callee(node.func, scope))
            if code is None:
                continue
            inner = _passed(node, name, code[0], code[1])
            if inner is not None:
                yield from _strings(code[0], inner, depth + 1, seen, owner if method else None)


@functools.lru_cache(maxsize=256)
def _file_strings(path: str) -> dict[str, tuple[str, ...]]:
    try:
        # linecache: a notebook cell's code is there too, under its cell's file name.
        tree = ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, dict[str, None]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = [
            s.id if isinstance(s, ast.Name) else s.attr
            for s in sides
            if isinstance(s, (ast.Name, ast.Attribute))
        ]
        for s in sides:
            items = s.elts if isinstance(s, (ast.Tuple, ast.List, ast.Set)) else [s]
            for x in items:
                if isinstance(x, ast.Constant) and isinstance(x.value, str):
                    for n in names:
                        found.setdefault(n, {}).setdefault(x.value, None)
    return {n: tuple(v) for n, v in found.items()}


def _in_file(owner: type, name: str) -> tuple[str, ...]:
    """The strings the code of ``owner``'s source file compares a name or an attribute ``name``
    with anywhere (``cfg.rel_pos_type == "mlp"`` in a block the class builds)."""
    try:
        path = inspect.getsourcefile(owner)
    except (TypeError, OSError):  # a builtin, or a class whose file is gone
        return ()
    return _file_strings(path).get(name, ()) if path else ()


@functools.lru_cache(maxsize=512)
def compared_strings(cls: type, name: str) -> tuple[str, ...]:
    """The strings ``cls``'s constructor compares its parameter ``name`` with (see the module
    doc), in the order the code reads them, then those its source file compares a name
    ``name`` with elsewhere; () where there is no source."""
    code = _code(cls)
    found = dict.fromkeys(_strings(code[0], name, 0, set(), cls)) if code is not None else {}
    found.update(dict.fromkeys(_in_file(cls, name)))
    return tuple(found)[:MAX_STRINGS]
