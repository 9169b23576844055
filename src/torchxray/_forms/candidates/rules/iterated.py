"""Iterated: a container holds ``live`` layers of one kind where the build holds ``b``, and a
field the constructor iterates holds ``b`` items.

A constructor that makes one stage per item of a sequence (``for i, n in
enumerate(block_config): self.features.add_module("denseblock%d" % (i + 1), ...)``) shows the
sequence's length as the count of the layers named alike (``denseblock1``, ``denseblock2``); the
other numbers of the names' text count other layers too (transitions, a stem). The field, where
the constructor iterates it (``_forms/sources/usage.py``) and it holds ``b`` items, is proposed
``live`` items (its own, cut or repeated): the items then move by the number rules. Example: a
DenseNet-BC written with ``add_module`` in loops, ``DenseNet(block_config=(2, 3))`` built with
its default ``(2, 2, 2)``: three dense blocks where the live one has two. A field of ``b + 1``
items (the widths between ``b`` layers: ``nn.Linear(widths[i], widths[i + 1])``) is proposed
``live + 1``; one a stage short (a stem made before the loop, named as a stage) ``live - 1``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from .measured import MAX_OFFSET, resized
from .problem import Problem, use_of

__all__ = ["propose"]

_DIGITS = re.compile(r"\d+$")


def _kinds(text: str) -> Counter[str]:
    """Children's names counted by their stem (``denseblock2`` -> ``denseblock``)."""
    return Counter(_DIGITS.sub("", n) for n in text.split(", ") if n)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    # The module's own containers (``self.features.add_module``, ``self.layers.append``); a
    # stage's blocks further down are counted by a depth, not by this sequence's length.
    if d.aspect != "children" or d.live is None or d.built is None or "." in d.path:
        return
    live, built = _kinds(d.live), _kinds(d.built)
    counts = {(built[k], live[k]) for k in live.keys() | built.keys() if built[k] != live[k]}
    for b, n in sorted(counts):
        if n < 1:
            continue
        for f in p.fields:
            u = use_of(p, f.name)
            v = p.values.get(f.name)
            if u is None or not u.sequence or not isinstance(v, (tuple, list)):
                continue
            if len(v) == b:
                yield {f.name: resized(v, n)}
            elif b and 0 < abs(len(v) - b) <= MAX_OFFSET and len(v) + n - b > 0:
                # Widths, one more than the layers between them (``range(len(widths) - 1)``);
                # stages one more than the items, a stem counted with them (``for i, d in
                # enumerate(dims, start=2)``): the length moves as the count does.
                yield {f.name: resized(v, len(v) + n - b)}
