"""How two tensors of one name differ: which kind of change, and by how much (chunked, float64)."""

from __future__ import annotations

import math

import torch

from .chunks import CHUNK, Scratch, no_values, paired_chunks


def compare(
    a: torch.Tensor, b: torch.Tensor, chunk: int = CHUNK, scratch: Scratch | None = None
) -> tuple[bool, float] | None:
    """``(identical, ||b - a|| / ||a||)`` for two tensors of one shape, or None when either has no
    values (meta, fake) or only one is complex. NaNs at the same place count as identical; the
    relative change is 0.0 for two zero tensors and inf when only ``a`` is zero."""
    if no_values(a) or no_values(b) or a.is_complex() != b.is_complex():
        return None
    same = True
    diff2 = norm2 = 0.0
    scratch = scratch or Scratch()
    for ca, cb in paired_chunks(a, b, chunk, scratch):
        if same and not torch.equal(ca, cb):
            same = bool(((ca == cb) | (ca.isnan() & cb.isnan())).all())
        d = torch.sub(cb, ca, out=scratch.get("work", ca.numel(), ca.device))
        # dot rather than (d * d).sum(): one chunk-sized temporary less.
        diff2 += float(torch.dot(d, d))
        norm2 += float(torch.dot(ca, ca))
    if same:
        return True, 0.0
    if norm2 == 0.0:
        return False, math.inf if diff2 > 0 else (0.0 if diff2 == 0 else math.nan)
    return False, math.sqrt(diff2) / math.sqrt(norm2)
