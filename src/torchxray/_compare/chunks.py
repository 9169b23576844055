"""Reading a tensor's values a bounded piece at a time, as float64, wherever the tensor lives.

Statistics and differences of big tensors are accumulated over chunks so that the extra memory is
a few chunks (``CHUNK`` elements, 8 MiB as float64), never a float64 copy of a whole 4 GiB
weight. float16 and bfloat16 values are exact in float64, so sums over them are not rounded in
their own dtype; quantized tensors are dequantized one slice at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

CHUNK = 1 << 20  # elements per chunk


def no_values(t: torch.Tensor) -> str | None:
    """Why ``t`` has no values to read (meta, fake, uninitialised lazy), or None when it has."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.nn.parameter import is_lazy

    if is_lazy(t):
        return "uninitialised lazy tensor: no values until the first forward"
    if isinstance(t, FakeTensor):
        return "fake tensor: no values"
    if t.is_meta:
        return "meta tensor: no values"
    return None


def _flat(t: torch.Tensor) -> bool:
    return t.is_contiguous() and not t.is_quantized


def float64_chunks(
    t: torch.Tensor, size: int = CHUNK, flat: bool | None = None
) -> Iterator[torch.Tensor]:
    """1-d float64 pieces of ``t`` (flattened, in order) of about ``size`` elements each.

    A contiguous tensor is sliced through a flat view (no copy beyond the chunk); any other
    tensor, quantized ones included, along its first dimension, so only the slice is copied
    (``flat=False`` forces that, so two tensors of one shape give chunks of the same bounds).
    Complex values come as their real and imaginary parts, bools and integers as their values.
    """
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    if t.numel() == 0:
        return
    if t.dim() == 0:
        t = t.reshape(1)
    if _flat(t) if flat is None else flat:
        view = t.view(-1)
        for start in range(0, view.numel(), size):
            yield view[start : start + size].to(torch.float64)
        return
    rows = t.shape[0]
    step = max(1, size // max(1, t[0].numel()))
    for start in range(0, rows, step):
        piece = t[start : start + step]
        if piece.is_quantized:
            piece = piece.dequantize()
        yield piece.reshape(-1).to(torch.float64)


def paired_chunks(
    a: torch.Tensor, b: torch.Tensor, size: int = CHUNK
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Chunks of two tensors of one shape, aligned element for element, ``b``'s on ``a``'s
    device (a chunk at a time, so a CPU checkpoint is compared with a GPU model in place)."""
    flat = _flat(a) and _flat(b)
    pairs = zip(float64_chunks(a, size, flat), float64_chunks(b, size, flat), strict=True)
    for ca, cb in pairs:
        yield ca, cb.to(ca.device)
