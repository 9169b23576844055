"""Source: the functions a called argument with no value may be, from the class's own file.

Research code passes one layer factory down a model: EDSR's ``EDSR(args, conv=default_conv)``
hands ``conv`` to every ``ResBlock(conv, n_feats, kernel_size)`` and ``Upsampler(conv, scale,
n_feats)``, which call it (``conv(n_feats, n_feats, kernel_size, bias=bias)``). Those blocks
keep no trace of the function (their layers are plain ``nn.Conv2d``), and ``nn.Conv2d`` itself
would not rebuild them (``default_conv`` adds the padding). The candidates, in order:

- the defaults that the file's other constructors and functions give a parameter of the same
  name (``EDSR``'s ``conv=default_conv``): the factory the model hands down;
- the file's own functions named after the parameter (``default_conv`` for ``conv``).

The search builds each and the gate proves the one that rebuilds the block; where two rebuild it
alike, the field is a guess (``candidates/ambiguous.py``).
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from ..._signature import resolve

__all__ = ["callables"]

MAX = 6  # candidates offered: a file's factories for one parameter are few


@functools.lru_cache(maxsize=256)
def callables(cls: type, name: str) -> tuple[Callable[..., Any], ...]:
    """The functions (and classes) ``cls``'s called argument ``name`` may be (module doc)."""
    home = sys.modules.get(cls.__module__)
    if home is None or cls.__module__.startswith("torch"):
        return ()
    own = [v for v in vars(home).values() if getattr(v, "__module__", None) == cls.__module__]
    out: dict[int, Callable[..., Any]] = {}
    for obj in own:
        if obj is cls or not isinstance(obj, (type, types.FunctionType)):
            continue
        default = _default(obj, name)
        if isinstance(default, (type, types.FunctionType, functools.partial)):
            out.setdefault(id(default), default)
    word = name.lower()
    for obj in own:
        if isinstance(obj, types.FunctionType) and word in obj.__name__.lower():
            out.setdefault(id(obj), obj)
    return tuple(out.values())[:MAX]


def _default(obj: Any, name: str) -> Any:
    try:
        p = resolve(obj).parameters.get(name)
    except (TypeError, ValueError):
        return None
    return None if p is None or p.default is inspect.Parameter.empty else p.default
