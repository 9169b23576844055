"""Optional term: a width started at one argument, an optional one added where it was given,
held by the build in the first alone.

``sources/accumulated.py`` reads ``cond_dim = embed_dim; if extra is not None: cond_dim +=
extra``. The layers the sum reaches show the sum; a search that leaves ``extra`` at None finds
``embed_dim`` at the sum (52), and a layer that shows ``embed_dim`` alone (a time embedding 32
wide) cannot move it without breaking the sum. Where the build holds ``b`` in the start argument
and the live layer shows ``live`` below it, the start goes to ``live`` and the optional
argument, now None, takes up ``b - live``. Example: a conditional 1-D U-Net built with
``embed_dim`` 52 and ``global_cond_dim`` None against a live one with a 32-wide time embedding:
``embed_dim`` 32, ``global_cond_dim`` 20. Tried only where the search would otherwise stop (the
registry's ``last`` scope), as ``kept_width.py``'s pair moves are.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...sources.accumulated import accumulated
from .problem import Problem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.owner is None:
        return
    sums = accumulated(p.owner)
    if not sums:
        return
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or not 0 < live < b:
            continue
        for s in sums:
            if s.start not in p.values or s.added not in p.values:
                continue
            if p.values[s.start] == b and p.values[s.added] is None:
                yield {s.start: live, s.added: b - live}
