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


class Scratch:
    """Chunk-sized buffers reused across the chunks and tensors of one `stats` or `diff` call.

    Fresh memory for every chunk's float64 copy and temporaries made converting, not computing,
    the largest cost of a ResNet-50's statistics on CPU (each new allocation touches new pages).
    A buffer handed out is valid until the next request under the same key.
    """

    def __init__(self) -> None:
        self._buffers: dict[tuple[str, torch.device, torch.dtype], torch.Tensor] = {}

    def get(
        self, key: str, n: int, device: torch.device, dtype: torch.dtype = torch.float64
    ) -> torch.Tensor:
        buf = self._buffers.get((key, device, dtype))
        if buf is None or buf.numel() < n:
            buf = self._buffers[(key, device, dtype)] = torch.empty(n, dtype=dtype, device=device)
        return buf[:n]


def float64_chunks(
    t: torch.Tensor,
    size: int = CHUNK,
    flat: bool | None = None,
    scratch: Scratch | None = None,
    key: str = "a",
) -> Iterator[torch.Tensor]:
    """1-d float64 pieces of ``t`` (flattened, in order) of about ``size`` elements each.

    A contiguous tensor is sliced through a flat view (no copy beyond the chunk); any other
    tensor, quantized ones included, along its first dimension, so only the slice is copied
    (``flat=False`` forces that, so two tensors of one shape give chunks of the same bounds).
    Complex values come as their real and imaginary parts, bools and integers as their values.
    With ``scratch`` the pieces are written into its buffer ``key`` (each piece is then valid only
    until the next one is made); a float64 tensor's pieces are views of it either way: read them,
    never write to them.
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
            yield _float64(view[start : start + size], scratch, key)
        return
    rows = t.shape[0]
    step = max(1, size // max(1, t[0].numel()))
    for start in range(0, rows, step):
        piece = t[start : start + step]
        if piece.is_quantized:
            piece = piece.dequantize()
        yield _float64(piece, scratch, key)


def _float64(piece: torch.Tensor, scratch: Scratch | None, key: str) -> torch.Tensor:
    if piece.dtype == torch.float64 and piece.is_contiguous():
        return piece.view(-1)
    if scratch is None:
        return piece.reshape(-1).to(torch.float64)
    out = scratch.get(key, piece.numel(), piece.device)
    out.view(piece.shape).copy_(piece)  # converts and gathers a strided piece in one copy
    return out


def paired_chunks(
    a: torch.Tensor, b: torch.Tensor, size: int = CHUNK, scratch: Scratch | None = None
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Chunks of two tensors of one shape, aligned element for element, ``b``'s on ``a``'s
    device (a chunk at a time, so a CPU checkpoint is compared with a GPU model in place)."""
    flat = _flat(a) and _flat(b)
    pairs = zip(
        float64_chunks(a, size, flat, scratch, "a"),
        float64_chunks(b, size, flat, scratch, "b"),
        strict=True,
    )
    for ca, cb in pairs:
        yield ca, cb.to(ca.device)
