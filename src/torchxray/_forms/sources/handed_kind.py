"""The kind of value an argument is, from the layers of the user's own it is handed to
(``usage.py`` reads the argument's own uses first; this follows it down into the blocks that take
it, where their uses say what it is and no ``isinstance`` test says it may be several kinds).
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable
from typing import Any

from ..._signature import resolve
from .uses import Usage

__all__ = ["handed_kind", "takes_floats"]


def handed_kind(
    read: Usage,
    seen: frozenset[tuple[type, str]],
    usage_of: Callable[[type, str, frozenset[tuple[type, str]]], Usage],
) -> Usage:
    """``read`` with the kind of value the layers of the user's own it hands the argument to
    take (``TemporalConvNet(n_in, channels)`` iterating ``channels``: a list here too; a
    ``Block(depth)`` taking ``range(depth)``: a number), where their own uses say it and test
    no kind (``isinstance``); followed down a chain of such layers (each once, ``seen``), each
    read by ``usage_of`` (``usage.py``'s reader, handed in: it calls this)."""
    number, sequence, indexed, text = read.number, read.sequence, read.indexed, read.text
    for h in read.handed:
        callee = h.callee
        if (
            h.index >= 0
            or not isinstance(callee, type)
            or callee.__module__.startswith("torch.")
            or (callee, h.param) in seen
        ):
            continue
        inner = usage_of(callee, h.param, seen | {(callee, h.param)})
        if inner.tested:
            continue
        number, sequence = number or inner.number, sequence or inner.sequence
        indexed, text = indexed or inner.indexed, text or inner.text
    if (number, sequence, indexed, text) == (read.number, read.sequence, read.indexed, read.text):
        return read
    return dataclasses.replace(read, number=number, sequence=sequence, indexed=indexed, text=text)


def takes_floats(read: Usage) -> bool:
    """Whether an argument with no annotation, whose default says int (``dropout=0``), takes
    floats: the constructor hands it on to a parameter that takes them (``nn.Dropout(dropout)``:
    ``p: float``; one with a float default). A whole number as a default says nothing of the
    fractions it also takes (a value given as one is read as one by ``kinds.py``)."""
    return any(h.index < 0 and _float_param(h.callee, h.param) for h in read.handed)


@functools.lru_cache(maxsize=512)
def _float_param(callee: Any, name: str) -> bool:
    try:  # the signature a call meets (a wrapped or hidden ``__init__`` too: ``_signature.py``)
        p = resolve(callee).parameters.get(name)
    except (TypeError, ValueError):  # a builtin without one (SignatureUnknown is a TypeError)
        return False
    if p is None:
        return False
    ann = p.annotation
    if ann is p.empty:
        return type(p.default) is float
    return ann in (float, "float") or float in typing.get_args(ann)
