"""Keywords dict: a dict of keywords handed on to a layer (``norm_kwargs=dict(eps=1e-3)``).

A keyword item or attribute of a layer below the module that differs is added, under its name
with the live value, to what each ``*_kwargs`` field holds. Example: timm's ``ConvNormAct``
given ``norm_kwargs`` where the live ``bn`` has ``eps=0.001``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    kw = p.keyword
    if kw is None or not p.diff.path or kw[0].startswith("_"):
        return
    for f in p.fields:
        v = p.values.get(f.name)
        if f.name.endswith("kwargs") and (v is None or isinstance(v, dict)):
            yield {f.name: {**(v or {}), kw[0]: kw[1]}}
