"""Source: an argument that names what ``__init__`` looks up on a module (``getattr(torch,
activation)``), read back off what the lookup left on the live module.

DeepXDE's networks take their activation as a string and keep the function it names:
``self.activation = getattr(torch, activation)`` holds ``torch.tanh`` for ``"tanh"``; a layer
made from a looked-up class (``self.act = getattr(nn, act)()``) holds a ``Tanh``. Nothing keeps
the string, and the same-named attribute (the function) is no value the constructor takes:
``getattr(torch, torch.tanh)`` fails. ``looked_up(cls, module, name)`` reads the constructor's
calls ``getattr(owner, name)`` whose owner is a module or a class its code names, and offers
the name under which that owner holds what the kept attribute holds now (its function or class,
or the class of the layer the lookup made).

Read conservatively: a lookup with a default (``getattr(nn, act, None)``) may find nothing, and
what the owner holds under the name must be the live object itself, so a name is offered only
where looking it up again gives what the module keeps.
"""

from __future__ import annotations

import ast
import functools
import types
from typing import Any

from torch import nn

from .code import code_of, is_name, kept_under, resolved

__all__ = ["looked_up"]


@functools.lru_cache(maxsize=256)
def _lookups(cls: type, name: str) -> tuple[tuple[Any, str, bool], ...]:
    """(owner, attribute kept under, whether the looked-up object is called) per lookup."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None:
        return ()
    out: list[tuple[Any, str, bool]] = []
    for load in code.loads.get(name, ()):
        call = code.up.get(load)
        if not (
            isinstance(call, ast.Call)
            and is_name(call.func, "getattr")
            and len(call.args) == 2
            and call.args[1] is load
            and not call.keywords
        ):
            continue
        owner = resolved(call.args[0], code.scope)
        if not isinstance(owner, (types.ModuleType, type)):
            continue
        outer = code.up.get(call)
        made = isinstance(outer, ast.Call) and outer.func is call  # getattr(nn, act)()
        kept = kept_under(outer if made else call, code.up)  # type: ignore[arg-type]
        if kept:
            out.append((owner, kept, made))
    return tuple(out)


def looked_up(cls: type, module: nn.Module, name: str) -> list[str]:
    """The names under which the owners ``cls.__init__`` looks ``name`` up on hold what the
    module keeps from each lookup (see the module doc); [] where it makes none."""
    out: list[str] = []
    try:
        found = _lookups(cls, name)
    except (TypeError, ValueError, RecursionError):
        return out
    for owner, kept, made in found:
        held = getattr(module, kept, None)
        if held is None:
            continue
        obj = type(held) if made else held
        word = getattr(obj, "__name__", None)
        if isinstance(word, str) and getattr(owner, word, None) is obj and word not in out:
            out.append(word)
    return out
