"""Source: a ``**kwargs`` handed on whole, as one dict, to a parameter of a block of the user's
(``MoEBlock(dim, heads, moe_kwargs)``, the block spreading it further down), read off that
block's own form.

``handed.py`` reads a ``**kwargs`` spread into a call (``Block(d, **kwargs)``); a constructor
that hands the dict itself to a block's parameter spreads nothing, and the keywords show only in
the block's form, as the value of that parameter. Where the block's form is exact and holds a
dict of string keys there, that dict is what the ``**kwargs`` held (``usage.py`` says which
block and parameter it was handed to; ``passed.py`` opens the block's form).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from ..field import Child
from .passed import handed
from .usage import usage

__all__ = ["handed_whole"]


def handed_whole(cls: type, module: nn.Module, name: str, child: Child) -> dict[str, Any] | None:
    """The dict ``**name`` held, read off the block it was handed to whole; None where it was
    handed to none, or no block's form holds a dict there."""
    u = usage(cls, name)
    if not u.handed or any(h.index >= 0 for h in u.handed):
        return None

    def exact(layer: nn.Module) -> Any:
        form = child(layer)
        return None if form is None or form.inexact else form

    for value in handed(module, u, exact):
        if type(value) is dict and value and all(isinstance(k, str) for k in value):
            return dict(value)
    return None
