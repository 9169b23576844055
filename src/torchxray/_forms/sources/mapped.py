"""A dict iterated to make one layer per key (``nn.ModuleDict({name: nn.Embedding(card, d) for
name, card in cards.items()})``, ``for task, n in heads.items(): self.heads[task] =
nn.Linear(h, n)``, through a helper method ``self.add_head(task, n)`` too): the dict read back
off the container those layers are held in.

A hand-written constructor that takes a mapping of names to sizes keeps none of it: each entry
is a layer under its key. The container's keys, in order, are the dict's keys (a dict keeps its
order, and so does a ``ModuleDict``); each entry's value is what the layer keeps of the
parameter the value was handed to (``Embedding.num_embeddings``, ``Linear.out_features``). Read
only where the value is handed bare to a layer that keeps it under the parameter's name (torch's
layers do), so the reading is that value or nothing; the rebuild proves it.
"""

from __future__ import annotations

import ast
from typing import Any

from torch import nn

from .code import Code, bound, code_of, is_name, resolved
from .helpers import method_of
from .keyed import reads_at

__all__ = ["mapped"]

MAX_ENTRIES = 64  # a longer container is no dict of sizes a person wrote out


def _iterated(node: ast.AST, code: Code) -> tuple[ast.AST, str, str] | None:
    """The loop or comprehension iterating the dict ``node`` by its items or keys, and the names
    it binds its key and value to ("" where the value is read as ``d[k]``)."""
    parent = code.up.get(node)
    how = "keys"
    it: ast.AST = node
    if isinstance(parent, ast.Attribute) and parent.value is node:
        call = code.up.get(parent)
        if not (
            isinstance(call, ast.Call) and call.func is parent and parent.attr in ("items", "keys")
        ):
            return None
        how, it = parent.attr, call
    loop = code.up.get(it)
    if not isinstance(loop, (ast.For, ast.comprehension)) or loop.iter is not it:
        return None
    t = loop.target
    if how == "items":
        if not (isinstance(t, ast.Tuple) and len(t.elts) == 2):
            return None
        k, v = t.elts
        if isinstance(k, ast.Name) and isinstance(v, ast.Name):
            return loop, k.id, v.id
        return None
    return (loop, t.id, "") if isinstance(t, ast.Name) else None


def _value_arg(call: ast.Call, key: str, value: str, dict_node: ast.AST) -> ast.AST | None:
    """The argument of ``call`` that is the entry's value: the name ``value``, or ``d[key]``."""
    for a in [*call.args, *(k.value for k in call.keywords)]:
        if value and is_name(a, value):
            return a
        if (
            not value
            and isinstance(a, ast.Subscript)
            and is_name(a.slice, key)
            and ast.dump(a.value) == ast.dump(dict_node)
        ):
            return a
    return None


def _layer_call(expr: ast.AST, code: Code) -> tuple[ast.Call, type] | None:
    if isinstance(expr, ast.Call):
        callee = resolved(expr.func, code.scope)
        if isinstance(callee, type) and issubclass(callee, nn.Module):
            return expr, callee
    return None


def _sites(
    body: list[ast.AST], key: str, value: str, dict_node: ast.AST, code: Code, owner: type, hop: int
) -> list[tuple[str, type, str]]:
    """(container attribute, layer class, the parameter the value is handed to) of each
    ``self.X[key] = Cls(...)`` / ``self.X.add_module(key, Cls(...))`` in ``body``, and of each
    one a helper method called ``self.m(key, value)`` makes (one hop)."""
    out: list[tuple[str, type, str]] = []
    for stmt in body:
        for node in ast.walk(stmt):
            target: ast.AST | None = None
            made: ast.AST | None = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, made = node.targets[0], node.value
                if not (isinstance(target, ast.Subscript) and is_name(target.slice, key)):
                    continue
                holder = target.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_module"
                and len(node.args) == 2
                and is_name(node.args[0], key)
            ):
                holder, made = node.func.value, node.args[1]
            elif isinstance(node, ast.Call) and hop == 0:
                out += _through_method(node, key, value, dict_node, code, owner)
                continue
            else:
                continue
            if not (isinstance(holder, ast.Attribute) and is_name(holder.value, "self")):
                continue
            got = _layer_call(made, code)
            arg = _value_arg(got[0], key, value, dict_node) if got else None
            param = bound(got[0], arg, got[1]) if got and arg is not None else None
            if got and param is not None and param[1] < 0:
                out.append((holder.attr, got[1], param[0]))
    return out


def _through_method(
    call: ast.Call, key: str, value: str, dict_node: ast.AST, code: Code, owner: type
) -> list[tuple[str, type, str]]:
    method = method_of(call.func, owner)
    arg = _value_arg(call, key, value, dict_node)  # self.add(k, v) / self.add(k, d[k])
    if method is None or arg is None:
        return []
    k, v = bound(call, key, method[1]), bound(call, arg, method[1])
    inner = code_of(method[0])
    if k is None or v is None or inner is None:
        return []
    body: list[ast.AST] = list(inner.tree.body) if isinstance(inner.tree, ast.Module) else []
    return _sites(body, k[0], v[0], ast.Name(id=""), inner, owner, 1)


def _comprehended(
    comp: ast.comprehension, key: str, value: str, dict_node: ast.AST, code: Code
) -> list[tuple[str, type, str]]:
    """``nn.ModuleDict({k: Cls(..., v) for k, v in d.items()})`` kept as ``self.X``."""
    dc = code.up.get(comp)
    if not (isinstance(dc, ast.DictComp) and is_name(dc.key, key)):
        return []
    holder_call = code.up.get(dc)
    if not isinstance(holder_call, ast.Call) or dc not in holder_call.args:
        return []
    assign = code.up.get(holder_call)
    if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1):
        return []
    t = assign.targets[0]
    got = _layer_call(dc.value, code)
    if not (got and isinstance(t, ast.Attribute) and is_name(t.value, "self")):
        return []
    arg = _value_arg(got[0], key, value, dict_node)
    param = bound(got[0], arg, got[1]) if arg is not None else None
    return [(t.attr, got[1], param[0])] if param is not None and param[1] < 0 else []


def _read(module: nn.Module, attr: str, cls: type, param: str) -> dict[str, Any] | None:
    root = getattr(module, attr, None)
    if not isinstance(root, nn.Module):
        return None
    items = list(root.named_children())
    if not items or len(items) > MAX_ENTRIES or any(type(m) is not cls for _, m in items):
        return None
    out: dict[str, Any] = {}
    for k, m in items:
        v = getattr(m, param, None)
        if isinstance(v, tuple) and v and all(x == v[0] for x in v):
            v = v[0]  # Conv2d keeps kernel_size=(k, k)
        if type(v) not in (int, float, bool, str):
            return None
        out[k] = v
    return out


def mapped(cls: type, module: nn.Module, name: str) -> list[dict[str, Any]]:
    """The dicts the argument ``name`` (``"cfg.cards"``: a key or field of a config read by
    keys) reads back to off the layers made one per key (see the module doc)."""
    param, _, rest = name.partition(".")
    at = reads_at(cls, param, tuple(rest.split(".")) if rest else ())
    if at is None:
        return []
    code, nodes = at
    out: list[dict[str, Any]] = []
    for n in nodes:
        got = _iterated(n, code)
        if got is None:
            continue
        loop, key, value = got
        if isinstance(loop, ast.comprehension):
            sites = _comprehended(loop, key, value, n, code)
        elif isinstance(loop, ast.For):
            sites = _sites(list(loop.body), key, value, n, code, cls, 0)
        else:
            continue
        for attr, layer_cls, p in sites:
            read = _read(module, attr, layer_cls, p)
            if read and read not in out:
                out.append(read)
    return out
