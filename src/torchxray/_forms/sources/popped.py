"""Source: keys a constructor takes out of its ``**kwargs`` with a default and hands to a layer
(``Generator(vocab, kwargs.pop("wordvec_dim", 16), kwargs.pop("hidden_dim", 24))``), read off
that layer's own form.

A ``**kwargs`` handed on to a layer is read from the layer's form (``handed.py``); a key popped
out of it first reaches another layer, through a parameter of that layer's own, and the rest of
the dict never shows it. Where the popped value is handed straight to a layer the module keeps
(``self.gen = Generator(...)``, the pop an argument of that call), the layer's exact form says
what it was given: a value other than the pop's default was in the ``**kwargs``. One at its
default may have been passed or not; both rebuild alike, and it is left out. Read
conservatively: a constant key, a literal default, the pop an argument of the call or a local
name assigned it once, the call's class one of ``torch.nn.Module``'s, its layer kept under one
attribute.
"""

from __future__ import annotations

import ast
import functools
from typing import Any

from torch import nn

from ..._signature import original
from ..._unwrap import original_class
from ..field import Child, found
from ..values import same
from .code import bound, code_of, kept_under, resolved

__all__ = ["popped"]

# (key, default, callee class, callee parameter, attribute the layer is kept under)
_Pop = tuple[str, Any, type, str, str]


def _pop_of(node: ast.AST, name: str) -> tuple[str, Any] | None:
    """(key, default) of ``name.pop("key", default)`` / ``name.get("key", default)``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("pop", "get")
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == name
        and len(node.args) == 2
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return None
    try:
        default = ast.literal_eval(node.args[1])
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return node.args[0].value, default


@functools.lru_cache(maxsize=512)
def _pops(cls: type, name: str) -> tuple[_Pop, ...]:
    init = original(cls.__init__)  # type: ignore[misc]
    code = code_of(init)
    if code is None:
        return ()
    out: list[_Pop] = []
    for node in ast.walk(code.tree):
        if not isinstance(node, ast.Call):
            continue
        callee = resolved(node.func, code.scope)
        if not (isinstance(callee, type) and issubclass(callee, nn.Module)):
            continue
        for a in [*node.args, *(k.value for k in node.keywords if k.arg is not None)]:
            # The pop itself, or a local name assigned it once (``d = kw.pop("d", 32)``).
            stored = code.stores.get(a.id, []) if isinstance(a, ast.Name) else []
            got = _pop_of(stored[0] if len(stored) == 1 else a, name)
            if got is None:
                continue
            at = bound(node, a, callee)
            kept = kept_under(node, code.up)
            if at is not None and at[1] == -1 and kept:
                out.append((got[0], got[1], callee, at[0], kept))
    return tuple(out)


def popped(cls: type, module: nn.Module, name: str, child: Child) -> dict[str, Any]:
    """The keys of ``**name`` the constructor popped and handed to a layer, with the values
    that layer's exact form holds where they are not the pop's default (see the module doc)."""
    out: dict[str, Any] = {}
    for key, default, callee, param, kept in _pops(cls, name):
        layer = module._modules.get(kept)
        if layer is None or original_class(type(layer)) is not callee:
            continue
        try:
            form = child(layer)
        except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
            continue
        if form is None or form.inexact:
            continue
        field = next((f for f in form.fields if f.name == param), None)
        if field is not None and found(field) and not same(field.value, default):
            out[key] = field.value
    return out
