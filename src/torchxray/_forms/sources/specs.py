"""A dict of specs, one layer made per entry: ``for name, spec in towers.items():
self.towers[name] = Tower(shared, **spec)``; the dict read back off the layers it made.

A hand-written constructor that takes a mapping of keyword dicts (a multi-task model's tower
specs, a loss's heads) keeps none of it: each entry is a layer under its key in a container
(``self.X[k] = ...``, ``self.X.add_module(k, ...)``). Each layer's own exact form says the
keywords it was made with, less what the call passes itself (its positional arguments and its
keywords): an entry holds those whose value is not the default. No candidate where a layer's
form is not exact or is of another class than the call makes: the rebuild proves the rest.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from torch import nn

from ..._signature import original
from .handed import NOT_PASSED, is_default
from .literals import source_tree

__all__ = ["specs"]


def _name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _held(stmt: ast.AST, key: str) -> tuple[str, ast.Call] | None:
    """(container attribute, the call) of ``self.X[key] = Cls(...)`` or
    ``self.X.add_module(key, Cls(...))``."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        if (
            isinstance(t, ast.Subscript)
            and _name(t.slice, key)
            and isinstance(t.value, ast.Attribute)
            and _name(t.value.value, "self")
            and isinstance(stmt.value, ast.Call)
        ):
            return t.value.attr, stmt.value
    if isinstance(stmt, ast.Call) and isinstance(stmt.func, ast.Attribute):
        holder = stmt.func.value
        if (
            stmt.func.attr == "add_module"
            and len(stmt.args) == 2
            and _name(stmt.args[0], key)
            and isinstance(stmt.args[1], ast.Call)
            and isinstance(holder, ast.Attribute)
            and _name(holder.value, "self")
        ):
            return holder.attr, stmt.args[1]
    return None


Loop = tuple[str, str, int, frozenset[str]]


def _loops(cls: type, name: str) -> tuple[Loop, ...]:
    """(container attribute, callee's last name, positional count, keyword names) of each layer
    made per entry of ``name.items()`` with ``**`` the entry's value."""
    return _every_loop(cls).get(name, ())


@functools.lru_cache(maxsize=512)
def _every_loop(cls: type) -> dict[str, tuple[Loop, ...]]:
    """``_loops`` of every name, read in one walk of the constructor (once a class: the pools
    ask it of every parameter)."""
    tree = source_tree(original(cls.__init__))  # type: ignore[misc]
    if tree is None:
        return {}
    out: dict[str, list[Loop]] = {}
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.For):
            continue
        it, target = loop.iter, loop.target
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Attribute)
            and it.func.attr == "items"
            and isinstance(it.func.value, ast.Name)
            and isinstance(target, ast.Tuple)
            and len(target.elts) == 2
        ):
            continue
        name = it.func.value.id
        key, spec = (e.id if isinstance(e, ast.Name) else "" for e in target.elts)
        if not (key and spec):
            continue
        for stmt in ast.walk(loop):
            got = _held(stmt, key)
            if got is None:
                continue
            holder, call = got
            if not any(k.arg is None and _name(k.value, spec) for k in call.keywords):
                continue
            func = call.func
            callee = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            named = frozenset(k.arg for k in call.keywords if k.arg is not None)
            fixed = [a for a in call.args if not isinstance(a, ast.Starred)]
            out.setdefault(name, []).append((holder, callee, len(fixed), named))
    return {k: tuple(v) for k, v in out.items()}


def specs(
    cls: type, module: nn.Module, name: str, form: Callable[[nn.Module], Any] | None
) -> dict[str, dict[str, Any]] | None:
    """The dict of keyword dicts ``name`` most likely held, or None where no loop over its
    items made the layers the module holds, or a layer's own form is not exact."""
    if form is None:
        return None
    for holder, callee, positional, named in _loops(cls, name):
        root = getattr(module, holder, None)
        if not isinstance(root, nn.Module):
            continue
        out: dict[str, dict[str, Any]] = {}
        for key, layer in root.named_children():
            if type(layer).__name__ != callee:
                return None
            try:
                f = form(layer)
            except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
                return None
            if f.inexact:
                return None
            plain = [x for x in f.fields if not x.group and x.kind not in ("varargs", "varkw")]
            covered = {x.name for x in plain[:positional]} | named
            out[key] = {
                x.name: x.value
                for x in plain
                if x.name not in covered
                and x.name not in NOT_PASSED
                and (x.required or not is_default(x.value, x.default))
            }
        if out:
            return out
    return None
