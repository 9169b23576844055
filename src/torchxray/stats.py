"""Weight statistics: norm, mean, spread, extremes, zeros, NaN/Inf counts and a histogram per tensor.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> layer = nn.Linear(4, 2)
    >>> with torch.no_grad():
    ...     _ = layer.weight.fill_(1.0)
    ...     layer.bias[0] = float("nan")
    >>> s = tx.stats(layer)
    >>> s["weight"].mean, s["weight"].norm, s["bias"].nonfinite
    (1.0, 2.8284271247461903, 1)

Computed on demand, never during a walk: reading every value of a big model costs a pass over all
its memory. Values are read in chunks (`_compare.chunks`) and accumulated in float64, so float16
and bfloat16 statistics are exact and the extra memory stays a few chunks whatever the tensor's
size; quantized tensors are dequantized chunk by chunk, and the packed weight and bias of quantized
layers are read through the layer's own ``_weight_bias()`` (named ``<path>._packed_params.weight``
and ``.bias``, as the tree counts them). Meta, fake and uninitialised lazy tensors have no values:
their entry says why in ``skipped`` and holds no numbers.

``norm``, ``mean``, ``std``, ``min``, ``max`` and ``hist`` are over the finite values; ``nonfinite``
counts the NaN and +-Inf ones (a single NaN would otherwise make every figure NaN, and finding
*which* weights went bad is the point).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.parameter import is_lazy

from ._compare.chunks import CHUNK, Scratch, float64_chunks, no_values
from ._tensors import plain_values
from ._tree.totals import packed_tensors

__all__ = ["HIST_BINS", "ParamStats", "stats", "tensor_stats"]

HIST_BINS = 16


@dataclass(frozen=True, slots=True)
class ParamStats:
    """Statistics of one parameter or buffer. ``std`` is the sample standard deviation (as
    ``torch.std``; 0.0 for a single value); ``hist`` counts the finite values in ``HIST_BINS``
    equal bins from ``min`` to ``max`` (all in the first bin when they are equal). Every figure
    is None, and ``skipped`` says why, for a tensor without values; they are None too when the
    tensor holds no finite value.

    Attributes:
        shape: The tensor's shape.
        dtype: Its dtype, e.g. ``"float32"``.
        numel: Its number of elements.
        norm: The L2 norm of its finite values.
        mean: Their mean.
        std: Their sample standard deviation.
        min: The smallest finite value.
        max: The largest finite value.
        zeros: How many values are exactly 0.
        nonfinite: How many are NaN or +-Inf.
        hist: Counts of the finite values in 16 equal bins from `min` to `max`.
        skipped: Why there are no figures (a meta tensor, an uninitialised lazy one), or None.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> s = tx.stats(nn.Linear(3, 2, device="meta"))["weight"]
        >>> s.shape, s.norm, s.skipped
        ((2, 3), None, 'meta tensor: no values')
    """

    shape: tuple[int, ...]
    dtype: str
    numel: int
    norm: float | None = None
    mean: float | None = None
    std: float | None = None
    min: float | None = None
    max: float | None = None
    zeros: int = 0
    nonfinite: int = 0
    hist: tuple[int, ...] = ()
    skipped: str | None = None


def stats(module: nn.Module) -> dict[str, ParamStats]:
    """``{name: ParamStats}`` for every parameter and buffer of ``module`` (names as
    ``named_parameters`` / ``named_buffers`` give them; a tensor shared by several modules once,
    under its first name).

    Computed on demand, a chunk at a time in float64 (exact for float16 and bfloat16); quantized
    tensors are dequantized chunk by chunk. The figures are over the finite values, and
    `nonfinite` counts the others.

    Args:
        module: A model or any of its modules.

    Returns:
        ``{name: ParamStats}``.

    Raises:
        TypeError: `module` is not an `nn.Module`.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> layer = nn.Linear(4, 2)
        >>> with torch.no_grad():
        ...     _ = layer.weight.fill_(1.0)
        ...     layer.bias[0] = float("nan")
        >>> s = tx.stats(layer)
        >>> s["weight"].mean, s["weight"].norm, s["weight"].hist[0], s["bias"].nonfinite
        (1.0, 2.8284271247461903, 8, 1)
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"stats() needs an nn.Module, got {type(module).__name__}")
    scratch = Scratch()
    return {name: tensor_stats(t, scratch=scratch) for name, t in _tensors(module).items()}


def _tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    found: dict[str, torch.Tensor] = {}
    seen: set[int] = set()

    def add(name: str, t: torch.Tensor) -> None:
        if id(t) not in seen:
            seen.add(id(t))
            found[name] = t

    for name, p in module.named_parameters():
        add(name, p)
    for name, b in module.named_buffers():
        add(name, b)
    for path, m in module.named_modules():
        for key, t in packed_tensors(m).items():
            add(f"{path}.{key}" if path else key, t)
    return found


def tensor_stats(t: torch.Tensor, chunk: int = CHUNK, scratch: Scratch | None = None) -> ParamStats:
    """`ParamStats` of one tensor, read ``chunk`` elements at a time."""
    why = no_values(t)
    if is_lazy(t):  # not even a shape yet
        return ParamStats((), "", 0, skipped=why)
    shape = tuple(int(s) for s in t.shape)
    dtype = str(t.dtype).removeprefix("torch.")
    numel = t.numel()
    if why is not None:
        return ParamStats(shape, dtype, numel, skipped=why)
    values = plain_values(t)  # a quantized wrapper (torchao): its dequantized values
    if values is None:
        why = f"a {type(t).__name__} keeps its values in its own format and cannot dequantize them"
        return ParamStats(shape, dtype, numel, skipped=why)
    try:
        return _read(values, shape, dtype, numel, chunk, scratch or Scratch())
    except Exception as exc:  # noqa: BLE001 - one odd tensor subclass must not sink a model's stats
        return ParamStats(shape, dtype, numel, skipped=f"values could not be read: {exc}")


def _read(
    t: torch.Tensor,
    shape: tuple[int, ...],
    dtype: str,
    numel: int,
    chunk: int,
    scratch: Scratch,
) -> ParamStats:
    # First pass: counts, extremes, and mean/variance merged per chunk (Chan et al.), which stays
    # accurate where a running sum of squares would cancel.
    count = zeros = bad = 0
    mean = m2 = sq = 0.0
    lo, hi = math.inf, -math.inf
    for c in float64_chunks(t, chunk, scratch=scratch):
        zeros += c.numel() - int(torch.count_nonzero(c))
        total_c = float(c.sum())
        if math.isfinite(total_c):  # the usual chunk: no mask, no copy (NaN/Inf make it non-finite)
            finite = c
        else:
            finite = c[torch.isfinite(c)]
            bad += c.numel() - finite.numel()
            total_c = float(finite.sum())
        n = finite.numel()
        if n == 0:
            continue
        c_mean = total_c / n
        dev = torch.sub(finite, c_mean, out=scratch.get("work", n, finite.device))
        c_m2 = float(torch.dot(dev, dev))
        total = count + n
        delta = c_mean - mean
        mean += delta * n / total
        m2 += c_m2 + delta * delta * count * n / total
        count = total
        sq += float(torch.dot(finite, finite))
        lo, hi = min(lo, float(finite.min())), max(hi, float(finite.max()))
    if count == 0:
        return ParamStats(shape, dtype, numel, zeros=zeros, nonfinite=bad)
    return ParamStats(
        shape,
        dtype,
        numel,
        norm=math.sqrt(sq),
        mean=mean,
        std=math.sqrt(m2 / (count - 1)) if count > 1 else 0.0,
        min=lo,
        max=hi,
        zeros=zeros,
        nonfinite=bad,
        hist=_hist(t, lo, hi, count, chunk, scratch),
    )


def _hist(
    t: torch.Tensor, lo: float, hi: float, count: int, chunk: int, scratch: Scratch
) -> tuple[int, ...]:
    """Second pass: the bin counts (the bounds are only known after the first)."""
    if lo == hi:
        return (count,) + (0,) * (HIST_BINS - 1)
    bins = torch.zeros(HIST_BINS, dtype=torch.int64)
    scale = HIST_BINS / (hi - lo)
    for c in float64_chunks(t, chunk, scratch=scratch):
        finite = c if math.isfinite(float(c.sum())) else c[torch.isfinite(c)]
        if not math.isfinite(scale):  # a range too narrow for float64: torch's own binning
            bins += torch.histc(finite, HIST_BINS, lo, hi).to(torch.int64).cpu()
            continue
        # histc's bin rule (max in the last bin), as an index and bincount: faster on CPU than histc
        # itself (bench/README.md has the figure).
        n, device = finite.numel(), finite.device
        work = torch.sub(finite, lo, out=scratch.get("work", n, device))
        index = scratch.get("index", n, device, torch.int64)
        index.copy_(work.mul_(scale).clamp_(0, HIST_BINS - 1))  # truncates: floor of values >= 0
        bins += torch.bincount(index, minlength=HIST_BINS).cpu()
    return tuple(int(b) for b in bins)
