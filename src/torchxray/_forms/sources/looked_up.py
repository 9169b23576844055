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

The name may be changed in case first (``getattr(nn, rnn_unit.upper())``: "lstm" and "LSTM"
both name ``nn.LSTM``): every spelling the change maps to the owner's name rebuilds alike, so
each is offered, the lower-case one first (why change the case of a name already in it), and
``spellings`` gives them to the search's settling (``candidates/ambiguous.py``), which flags the
one found as a guess wherever another rebuilds as exactly.

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

__all__ = ["looked_up", "spellings"]

# A string method that changes only the case of a name: the spellings each maps to one name.
_CASES = {
    "upper": lambda w: [w.lower(), w.capitalize(), w],
    "lower": lambda w: [w, w.upper(), w.capitalize()],
    "casefold": lambda w: [w, w.upper(), w.capitalize()],
    "capitalize": lambda w: [w.lower(), w],
    "title": lambda w: [w.lower(), w],
}


def _looked(arg: ast.AST, load: ast.AST) -> str | None:
    """ "" where ``arg`` is the name itself, the case method where it is ``name.upper()``, None
    where it is neither."""
    if arg is load:
        return ""
    if (
        isinstance(arg, ast.Call)
        and isinstance(arg.func, ast.Attribute)
        and arg.func.value is load
        and arg.func.attr in _CASES
        and not arg.args
        and not arg.keywords
    ):
        return arg.func.attr
    return None


@functools.lru_cache(maxsize=256)
def _lookups(cls: type, name: str) -> tuple[tuple[Any, str, bool, str], ...]:
    """(owner, attribute kept under, whether the looked-up object is called, the case method
    applied to the name first or "") per lookup."""
    init = cls.__dict__.get("__init__")
    code = code_of(init) if isinstance(init, types.FunctionType) else None
    if code is None:
        return ()
    out: list[tuple[Any, str, bool, str]] = []
    for load in code.loads.get(name, ()):
        call = code.up.get(load)
        case = code.up.get(call) if call is not None else None
        if isinstance(call, ast.Attribute) and isinstance(case, ast.Call) and case.func is call:
            call = code.up.get(case)  # getattr(nn, name.upper()): the lookup around the case
        if not (
            isinstance(call, ast.Call)
            and is_name(call.func, "getattr")
            and len(call.args) == 2
            and not call.keywords
            and (method := _looked(call.args[1], load)) is not None
        ):
            continue
        owner = resolved(call.args[0], code.scope)
        if not isinstance(owner, (types.ModuleType, type)):
            continue
        outer = code.up.get(call)
        made = isinstance(outer, ast.Call) and outer.func is call  # getattr(nn, act)()
        kept = kept_under(outer if made else call, code.up)  # type: ignore[arg-type]
        if kept:
            out.append((owner, kept, made, method))
    return tuple(out)


def looked_up(cls: type, module: nn.Module, name: str) -> list[str]:
    """The names under which the owners ``cls.__init__`` looks ``name`` up on hold what the
    module keeps from each lookup (see the module doc); [] where it makes none."""
    out: list[str] = []
    try:
        found = _lookups(cls, name)
    except (TypeError, ValueError, RecursionError):
        return out
    for owner, kept, made, method in found:
        held = getattr(module, kept, None)
        if held is None:
            continue
        obj = type(held) if made else held
        word = getattr(obj, "__name__", None)
        if isinstance(word, str) and getattr(owner, word, None) is obj:
            words = _CASES[method](word) if method else [word]
            out += [w for w in dict.fromkeys(words) if w not in out]
    return out


def spellings(cls: type, module: nn.Module, name: str) -> list[str]:
    """The names ``looked_up`` offers where the constructor changes their case before the
    lookup (each rebuilds alike: the settling flags the one found), [] where it does not."""
    try:
        cased = any(method for *_, method in _lookups(cls, name))
    except (TypeError, ValueError, RecursionError):
        return []
    words = looked_up(cls, module, name) if cased else []
    return words if len(words) > 1 else []
