"""Source: a list the constructor reads only by constant indexes and its length, each reading kept
under an attribute (``self.hidden_size = layer_sizes[0]``, ``self.num_layers =
len(layer_sizes)``; ``self.c_in = chans[0]``, ``self.c_out = chans[-1]``) or handed to a kept
layer as a keyword (``self.w_1 = nn.Conv1d(d, h, kernel_size=kernel_size[0], ...)``, read off
``w_1.kernel_size``; a conv's number kept per dimension as that number), put back together.
Without a ``len()`` its length is the places read (``[0]`` and ``[1]``: a pair).

Nothing keeps such a list whole and no layer is handed it whole, so no other source offers it;
the attributes say its length and the items at the indexes read. It is offered only where those
indexes cover every place of the list (one item, or a pair read at ``[0]`` and ``[-1]``): an item
the constructor never reads could be anything, and a value that fills it in would rebuild alike
while saying what nobody knows. A tuple where the field's default is one, else a list.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from torch import nn

from .code import code_of

__all__ = ["indexed_kept"]

_MISSING = object()


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.attr if node.value.id == "self" else None
    return None


@functools.lru_cache(maxsize=256)
def _readings(cls: type, name: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]] | None:
    """((attribute, index) of each ``self.a = name[i]``, attributes of ``self.n = len(name)``),
    or None where ``name`` is read otherwise too (iterated, sliced, handed on whole)."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if init is not None else None
    if code is None:
        return None
    items: list[tuple[str, int]] = []
    lengths: list[str] = []
    for load in code.loads.get(name, []):
        parent = code.up.get(load)
        if isinstance(parent, ast.Subscript) and parent.value is load:
            idx = _index(parent.slice)
            if idx is None:
                return None
            attr = _kept(code.up.get(parent), parent) or _handed(code.up, parent)
            if attr is not None:
                items.append((attr, idx))
        elif (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id == "len"
            and (attr := _kept(code.up.get(parent), parent)) is not None
        ):
            lengths.append(attr)
        else:
            return None
    if not items or not lengths and any(i < 0 for _, i in items):
        return None  # a place from the end needs the length
    return tuple(items), tuple(lengths)


def _index(key: ast.AST) -> int | None:
    """A constant whole-number index (``[0]``, ``[-1]``), or None."""
    sign = 1
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
        sign, key = -1, key.operand
    v = key.value if isinstance(key, ast.Constant) else None
    return sign * v if type(v) is int else None


def _handed(up: dict[ast.AST, ast.AST], value: ast.AST) -> str | None:
    """``layer.kw`` where ``value`` is the keyword ``kw`` of a call kept as ``self.layer = Cls(...,
    kw=value)``, or None."""
    kw = up.get(value)
    call = up.get(kw) if isinstance(kw, ast.keyword) and kw.arg else None
    if not isinstance(call, ast.Call) or not isinstance(kw, ast.keyword):
        return None
    attr = _kept(up.get(call), call)
    return f"{attr}.{kw.arg}" if attr is not None else None


def _read(module: nn.Module, path: str) -> Any:
    """The value at ``path`` (``layer.kw``); a layer's tuple of one number as that number."""
    v: Any = module
    for part in path.split("."):
        try:
            v = getattr(v, part)
        except Exception:  # noqa: BLE001 - missing, or a property that raises: nothing read
            return _MISSING
    if isinstance(v, tuple) and v and len(set(v)) == 1 and "." in path:
        return v[0]  # a conv's int kept per dimension (``stride=2`` as ``(2, 2)``)
    return v


def _kept(stmt: ast.AST | None, value: ast.AST) -> str | None:
    """The attribute ``self.a = value`` assigns, or None."""
    if isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1:
        return _self_attr(stmt.targets[0])
    return None


def indexed_kept(cls: type, module: nn.Module, name: str, default: Any) -> list[Any]:
    """The list ``name`` stood for, where its kept readings cover every place of it."""
    read = _readings(cls, name)
    if read is None:
        return []
    items, lengths = read
    ns = {_read(module, a) for a in lengths} or {max(i for _, i in items) + 1}
    n = ns.pop() if len(ns) == 1 else None
    if type(n) is not int or n < 1:
        return []
    out: list[Any] = [None] * n
    for attr, idx in items:
        v = _read(module, attr)
        if not -n <= idx < n or v is _MISSING:
            return []
        if out[idx] is not None and out[idx] != v:
            return []
        out[idx] = v
    if any(v is None for v in out):
        return []  # an item nothing reads: no value to say
    return [tuple(out) if isinstance(default, tuple) else out]
