"""The kind of value an argument is, from the layers of the user's own it is handed to
(``usage.py`` reads the argument's own uses first; this follows it down into the blocks that take
it, where their uses say what it is and no ``isinstance`` test says it may be several kinds).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .uses import Usage

__all__ = ["handed_kind"]


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
