"""A sampled step's activation figures, per module output (``_watch/record.py`` calls them from
its forward hook): the output's sum, norm and count of non-zeros, and for a bounded activation
(``BOUNDS``) the share of values at a bound, as 0-d tensors read at the step's end.

>>> import torch
>>> [round(float(t), 3) for t in act_stats(torch.nn.ReLU(), torch.tensor([0.0, 3.0, -4.0]))]
[-1.0, 5.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from .finite import fast_sum as _sum

__all__ = ["BOUNDS", "act_stats", "bounds", "first_float", "is_fake"]

# Bounded activations: (low, high) for the saturation figure, by class.
BOUNDS: dict[type, Any] = {
    nn.Tanh: (-1.0, 1.0),
    nn.Sigmoid: (0.0, 1.0),
    nn.Softsign: (-1.0, 1.0),
    nn.Hardsigmoid: (0.0, 1.0),
    nn.Hardtanh: lambda m: (float(m.min_val), float(m.max_val)),
}

_NATIVE = (torch.float32, torch.float64)  # summed as they are (``fast_sum``)

# Classes with no bound in their MRO (looked up once: a sampled step asks for every module).
_UNBOUNDED: set[type] = set()
_UNBOUNDED_FOR = [len(BOUNDS)]


def is_fake(t: torch.Tensor) -> bool:
    """Whether ``t`` is fake or meta: the probe and tx.memory run the model on such tensors, with
    nothing to measure there."""
    return t.device.type == "meta" or type(t).__name__ == "FakeTensor"


def first_float(value: Any) -> torch.Tensor | None:
    """The first floating-point tensor with values in an output (a tensor, a tuple, a dict)."""
    if type(value) is torch.Tensor:  # the common case, without a pytree walk
        return value if value.is_floating_point() and value.numel() else None
    for leaf in tree_leaves(value):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel():
            return leaf
    return None


def bounds(module: nn.Module) -> tuple[float, float] | None:
    """The (low, high) of a bounded activation's output, None for any other module."""
    if len(BOUNDS) != _UNBOUNDED_FOR[0]:  # a bound added since: look again
        _UNBOUNDED.clear()
        _UNBOUNDED_FOR[0] = len(BOUNDS)
    if type(module) in _UNBOUNDED:
        return None
    for cls in type(module).__mro__:
        b = BOUNDS.get(cls)
        if b is not None:
            return b(module) if callable(b) else b
    _UNBOUNDED.add(type(module))
    return None


def act_stats(module: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Of a detached output ``x``: sum, norm and count of non-zeros (mean, std and zeros follow
    at the step's end, divided there: an op less per figure). Why not ``std_mean`` and
    ``count_nonzero``: on the CPU each takes 100-200 times a sum (bench/README.md), more than
    the convolution that made the tensor. A float32/float64 output in one block is read with
    two BLAS dot products: its squares (the norm's), and its sign with itself, 1 for each
    non-zero (exact), where ``vector_norm`` and ``sign().abs_().sum()`` took a fifth longer on a
    ResNet-sized output (bench/README.md, issue 55)."""
    if x.dtype in _NATIVE and x.is_contiguous():  # ``fast_sum`` without its detach
        v = x.view(-1)
        s = v.sign()
        got = [v.sum(), torch.dot(v, v).sqrt_(), torch.dot(s, s)]
    elif x.dtype in _NATIVE:  # as it is (a dtype argument costs the CPU kernel ~4x)
        got = [x.sum(), torch.linalg.vector_norm(x), x.sign().abs_().sum()]
    else:
        got = [
            _sum(x),
            torch.linalg.vector_norm(x, dtype=torch.float32),  # sqrt(n E[x^2])
            _sum(x.sign().abs_()),
        ]
    b = bounds(module)
    if b is not None:
        lo, hi = b
        mid, reach = (hi + lo) / 2, (hi - lo) / 2 * 0.98  # within 1% of the range from a bound
        got.append(_sum((x - mid).abs_().ge_(reach)))
    return got
