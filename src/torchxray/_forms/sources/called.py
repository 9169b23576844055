"""Source: a factory argument the constructor calls (``conv(n_feats, n_feats, kernel_size)``), read
where nothing annotates it and no value is known.

Research code hands its blocks the function that makes their layers (EDSR's ``conv=default_conv``
in the model, required in each ``ResBlock(conv, n_feats, ...)`` and ``Upsampler(conv, scale,
...)``). The block keeps nothing of it, and a field nothing annotates is offered no class: every
build failed on "'NoneType' object is not callable". The candidates, in order: the defaults the
file's other constructors and functions give a parameter of that name (EDSR's
``conv=default_conv``: the factory the model hands down, ``handed_down``), then the functions of
the constructor's own module named like the parameter (``default_conv`` for ``conv``): a
person's helper lives beside the blocks it makes layers for.

Not the classes of its layers: with ``Conv2d`` the factories rule finds ``partial(Conv2d,
padding=(1, 1))`` and a kernel of ``(3, 3)``, which rebuild it today and not after an edit of
the kernel (``default_conv`` pads by half of it): a value no edit proves is not offered. Where
two of the functions rebuild it as exactly, the one found is a flagged guess
(``candidates/ambiguous.py``): which one was passed is not known.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import torch_own
from .usage import Usage

__all__ = ["MAX_FUNCTIONS", "called_factories", "file_factories", "handed_down", "named_functions"]

MAX_FUNCTIONS = 4  # functions named like the parameter, of one module (more: no helper's)


def named_functions(cls: type, name: str) -> list[types.FunctionType]:
    """The functions defined in ``cls``'s module one of whose words (between underscores) is
    ``name`` (``default_conv`` for ``conv``), in the module's order; none where more than
    ``MAX_FUNCTIONS`` are."""
    init = cls.__dict__.get("__init__")
    scope = getattr(init, "__globals__", None) or {}
    stem = name.lower().removesuffix("_fn").removesuffix("_layer")
    if len(stem) < 3:
        return []
    found = [
        v
        for k, v in scope.items()
        if inspect.isfunction(v)
        and v.__module__ == cls.__module__
        and f"_{stem}_" in f"_{k.lower()}_"  # a word of its name: not ``test_..._convs``
        and not k.startswith("_")
    ]
    return found if len(found) <= MAX_FUNCTIONS else []


@functools.lru_cache(maxsize=256)
def handed_down(cls: type, name: str) -> tuple[Any, ...]:
    """The functions, classes and partials that the other classes and functions of ``cls``'s
    module give a parameter called ``name`` as its default, in the module's order."""
    home = sys.modules.get(cls.__module__)
    if home is None or torch_own(cls):
        return ()
    out: dict[int, Any] = {}
    for obj in list(vars(home).values()):
        if obj is cls or getattr(obj, "__module__", None) != cls.__module__:
            continue
        if not isinstance(obj, (type, types.FunctionType)):
            continue
        try:
            p = resolve(obj).parameters.get(name)
        except (TypeError, ValueError):
            continue
        d = None if p is None or p.default is inspect.Parameter.empty else p.default
        if isinstance(d, (type, types.FunctionType, functools.partial)):
            out.setdefault(id(d), d)
    return tuple(out.values())[:MAX_FUNCTIONS]


def file_factories(cls: type, name: str) -> list[Any]:
    """``handed_down`` first, then ``named_functions``, once each."""
    out = list(handed_down(cls, name))
    return out + [f for f in named_functions(cls, name) if all(f is not o for o in out)]


def called_factories(module: nn.Module, cls: type, name: str, u: Usage) -> list[Any]:
    """A called argument's candidates (see the module doc); none unless the constructor calls
    it and uses it for nothing else a factory could not be."""
    if not u.called or u.number or u.sequence or u.fields or u.keys or u.unpacked:
        return []
    return file_factories(cls, name)
