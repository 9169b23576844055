"""Keyword item: a ``name=value`` item of a layer's repr, or an attribute, that differs.

The live value goes to each field named for the item (``eps`` for ``eps=1e-06``, ``norm_eps``
too); a factory that holds the item among its keywords (``partial(BatchNorm2d, eps=1e-3)`` read
off one layer) loses it, so each call passes its own or the default. A live repr that leaves the
item out holds its class's default. Example: diffusers' ``ResnetBlock2D(in_channels=32,
eps=1e-6)`` against a live block whose ``norm1`` reads ``eps=1e-05``: ``eps`` 1e-05.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from .problem import Problem, named

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    kw = p.keyword
    if kw is None:
        return
    key, live = kw
    for f in p.fields:
        if named(f, key):
            yield {f.name: live}
        v = p.values.get(f.name)
        if isinstance(v, functools.partial) and key in v.keywords:
            # A factory read off one layer holds what its call passed (stride=2 for the one
            # that downsamples): without it, each call passes its own or the default.
            rest = {k: x for k, x in v.keywords.items() if k != key}
            yield {f.name: functools.partial(v.func, *v.args, **rest)}
