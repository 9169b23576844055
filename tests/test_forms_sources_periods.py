"""Every k-th layer made otherwise (``_forms/sources/periods.py``): the step at which a stack's
items hold other children."""

from __future__ import annotations

from torch import nn

from tests.handwritten.dictconfigs import MemoryStack
from torchxray._forms.sources.periods import periods


def test_the_period_of_the_blocks_made_otherwise() -> None:
    stack = MemoryStack(dict(in_dim=5, d=12, hidden=20, memory_dim=7, memory_every=3, depth=7))
    assert 3 in periods(stack)  # blocks 0, 3, 6 read the memory
    assert periods(nn.Sequential(*[nn.Linear(4, 4) for _ in range(4)])) == []
