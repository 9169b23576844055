"""How two tensors of one name differ: which kind of change, and by how much (chunked, float64)."""

from __future__ import annotations

import math

import torch

from .._tensors import inner_tensors, is_wrapper, layout, plain_values
from .chunks import CHUNK, Scratch, no_values, paired_chunks


def compare(
    a: torch.Tensor, b: torch.Tensor, chunk: int = CHUNK, scratch: Scratch | None = None
) -> tuple[bool, float] | None:
    """``(identical, ||b - a|| / ||a||)`` for two tensors of one shape, or None when either has no
    values (meta, fake) or only one is complex. NaNs at the same place count as identical; the
    relative change is 0.0 for two zero tensors and inf when only ``a`` is zero.

    A tensor subclass that stores its data in other tensors (torchao's quantized weights) is
    compared through its dequantized values; one that cannot dequantize, by its inner tensors
    (identical or not; no relative change)."""
    if no_values(a) or no_values(b) or a.is_complex() != b.is_complex():
        return None
    if is_wrapper(a) or is_wrapper(b):
        pa, pb = plain_values(a), plain_values(b)
        if pa is None or pb is None:
            return _compare_inner(a, b)
        a, b = pa, pb
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


def _compare_inner(a: torch.Tensor, b: torch.Tensor) -> tuple[bool, float] | None:
    """Two wrappers whose values cannot be read one by one: identical when they are stored
    alike (class, inner tensors equal); how much they differ is then unknown."""
    if layout(a) != layout(b):
        return None
    ia, ib = inner_tensors(a), inner_tensors(b)
    if len(ia) != len(ib) or any(no_values(t) for t in (*ia, *ib)):
        return None
    same = all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y.to(x.device))
        for x, y in zip(ia, ib)
    )
    return (True, 0.0) if same else None
