"""Every k-th layer made otherwise (``has_cross = i % cfg["cross_attention_freq"] == 0``,
``global_attn = (i + 1) % every == 0``): the period read off a stack of layers of one class whose
items differ in which children they hold.

A hand-written stack often gives one block in k something more (a cross-attention, a global
attention, a downsampling); the constructor reads k only in a test of the block's index, and the
layers show it only as the gaps between the blocks that have it. No width or count of the module
is such a number, so the pools' ints do not offer it: here each stack (a ``ModuleList`` or
``Sequential`` of items of one class) is read for the items whose children differ from the
first's, and where they fall at a regular step, that step is a candidate (and the step of the
items like the first, which a test ``i % k != 0`` marks). The rebuild proves it.
"""

from __future__ import annotations

from torch import nn

from .layout import descendants

__all__ = ["periods"]

MAX_ITEMS = 256  # a longer stack is not read


def _step(marked: list[int]) -> int | None:
    """The common gap of the indices ``marked`` (two at least), or None."""
    if len(marked) < 2:
        return None
    gaps = {b - a for a, b in zip(marked, marked[1:])}
    return gaps.pop() if len(gaps) == 1 else None


def periods(module: nn.Module) -> list[int]:
    """The steps at which the items of the module's stacks hold other children (see the module
    doc), first stack first."""
    out: list[int] = []
    for c in descendants(module):
        if not isinstance(c, (nn.ModuleList, nn.Sequential)):
            continue
        items = list(c.children())
        if not 2 < len(items) <= MAX_ITEMS or len({type(m) for m in items}) != 1:
            continue
        shapes = [tuple(n for n, x in m.named_children() if x is not None) for m in items]
        if len(set(shapes)) != 2:
            continue
        same = [i for i, s in enumerate(shapes) if s == shapes[0]]
        other = [i for i, s in enumerate(shapes) if s != shapes[0]]
        for marked in (same, other):
            step = _step(marked)
            if step is not None and step > 1 and step not in out:
                out.append(step)
    return out
