"""Measured: a number the build shows is the length of a field it measures with ``len()``.

A constructor that takes a sequence only for its length (``num_classes = len(labels)``) keeps
nothing of it but that number: where the build holds ``b`` and the live module ``live``, and a
field the constructor measures (``_forms/sources/usage.py``) holds a sequence of ``b`` items, it is
proposed a sequence of ``live`` items, its own items repeated. Only the length is known: any
sequence of that length rebuilds the module exactly. Example: a DeepSpeech-style model built
with ``labels="abc"`` whose output layer has 9 features where the live one was given 9 labels.
A count kept a small constant away from the length (``self.num_stages = len(dims) + 1``) moves
the length as much as the count differs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem, use_of

__all__ = ["propose"]

MAX_LENGTH = 4096  # a length past this is a width, not a count of items
MAX_OFFSET = 2  # a count kept as ``len(x) + 1`` (or - 1, + 2): a constant the code adds


def resized(v: Any, n: int) -> Any:
    """``v`` (a str, tuple or list) as ``n`` items: its own, repeated or cut."""
    items = (list(v) * (n // len(v) + 1))[:n]
    return "".join(items) if isinstance(v, str) else type(v)(items)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or not 0 < live <= MAX_LENGTH:
            continue
        for f in p.fields:
            u = use_of(p, f.name)
            v = p.values.get(f.name)
            if u is None or not u.measured or not isinstance(v, (str, tuple, list)) or not v:
                continue
            if len(v) == b and b:  # (a value true with no items has nothing to repeat)
                yield {f.name: resized(v, live)}
            elif 0 < abs(b - len(v)) <= MAX_OFFSET and len(v) + live - b > 0:
                # A count kept with a constant beside the length (``self.num_stages =
                # len(dims) + 1``, the stem counted too): the length moves as the count does.
                yield {f.name: resized(v, len(v) + live - b)}
