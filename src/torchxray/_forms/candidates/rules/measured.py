"""Measured: a number the build shows is the length of a field it measures with ``len()``.

A constructor that takes a sequence only for its length (``num_classes = len(labels)``) keeps
nothing of it but that number: where the build holds ``b`` and the live module ``live``, and a
field the constructor measures (``_forms/sources/usage.py``) holds a sequence of ``b`` items, it is
proposed a sequence of ``live`` items, its own items repeated. Only the length is known: any
sequence of that length rebuilds the module exactly. Example: a DeepSpeech-style model built
with ``labels="abc"`` whose output layer has 9 features where the live one was given 9 labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]

MAX_LENGTH = 4096  # a length past this is a width, not a count of items


def resized(v: Any, n: int) -> Any:
    """``v`` (a str, tuple or list) as ``n`` items: its own, repeated or cut."""
    items = (list(v) * (n // len(v) + 1))[:n]
    return "".join(items) if isinstance(v, str) else type(v)(items)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or not 0 < live <= MAX_LENGTH:
            continue
        for f in p.fields:
            u = p.uses.get(f.name)
            v = p.values.get(f.name)
            if u is None or not u.measured or not isinstance(v, (str, tuple, list)) or not v:
                continue
            if len(v) == b and b:  # (a value true with no items has nothing to repeat)
                yield {f.name: resized(v, live)}
