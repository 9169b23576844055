"""Handed keywords: a dict of keywords handed on to a layer (``sk_kwargs=dict(rd_divisor=16)``).

The keywords of the layer's own exact form, as its factories hold them (``Problem.child``), are
added to what each ``*_kwargs`` field holds; the layer nearest the module first (the one its
constructor made). Only where a layer was made there or its repr or attributes differ, and after
the plain values: a factory costs a child form. Example: timm's ``SelectiveKernelBottleneck(
sk_kwargs=dict(rd_divisor=16))`` whose ``SelectiveKernel`` layer was made with those keywords.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["made_there", "propose"]


def made_there(p: Problem) -> bool:
    """A factory may explain the difference: a layer's class, a layer on the live side only, or
    a layer's repr or attributes."""
    d = p.diff
    made = d.aspect == "class" or d.aspect == "module" and d.live is not None
    return p.child is not None and (d.aspect.startswith(("repr", "attr")) or made)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.child is None or not made_there(p):
        return
    dicts = [
        f
        for f in p.fields
        if f.name.endswith("kwargs") and f.kind != "varkw" and _dict_or_none(p.values.get(f.name))
    ]
    for layer in reversed(p.layers[1:]) if dicts else []:
        for made in p.child(layer):
            if isinstance(made, functools.partial) and made.func is type(layer) and made.keywords:
                for f in dicts:
                    yield {f.name: {**(p.values.get(f.name) or {}), **made.keywords}}


def _dict_or_none(v: Any) -> bool:
    return v is None or isinstance(v, dict)
