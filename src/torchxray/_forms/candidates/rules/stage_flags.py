"""Stage flags: a list of booleans, one per stage, where the build differs from the live module.

A constructor that takes one flag per stage (torchvision's ResNet ``replace_stride_with_dilation
= [False, True, False]``: that stage dilates where it would stride) shows no flag anywhere: its
stages have another stride, dilation or padding. The field holds a list of flags, or None where
the constructor sets it to one itself (``if flags is None: flags = [False, False, False]``, read
by ``_forms/sources/usage.py`` as ``rebound``), which says how many flags it takes. Each flag
flipped alone is proposed (a stage's layers follow their own flag, so the search flips them one
at a time, each step scoring better); at most ``MAX_FLAGS`` flags, for the first differences
(``FIRST_DIFFS_MOVED``). Example: a ResNet built with ``replace_stride_with_dilation=None``
against a live one whose third stage dilates: ``[False, True, False]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard

from ..tuning import FIRST_DIFFS_MOVED, MAX_FLAGS
from .problem import Problem

__all__ = ["propose"]


def _flags(v: Any) -> TypeGuard[list[bool] | tuple[bool, ...]]:
    return (
        isinstance(v, (list, tuple)) and 0 < len(v) <= MAX_FLAGS and all(type(x) is bool for x in v)
    )


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.index >= FIRST_DIFFS_MOVED:
        return
    for f in p.fields:
        v = p.values.get(f.name)
        if v is None:
            u = p.uses.get(f.name)
            v = next((r for r in u.rebound if _flags(r)), None) if u is not None else None
        if not _flags(v):
            continue
        for i in range(len(v)):
            yield {f.name: type(v)(not x if j == i else x for j, x in enumerate(v))}
