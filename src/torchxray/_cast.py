"""A module given another module's device and floating dtype, its complex tensors kept.

``nn.Module.to(dtype=torch.float32)`` casts complex tensors to that real dtype too, dropping
their imaginary parts (a Fourier layer's ``cfloat`` weights become real ones): torchxray, which
gives a rebuilt or replacement module the floating dtype of the one it stands for, casts only
floating-point tensors, one by one, through the same ``_apply`` that ``to`` uses.

    >>> import torch
    >>> from torch import nn
    >>> m = nn.Linear(2, 2).double()
    >>> m.register_buffer("w", torch.zeros(2, dtype=torch.cfloat))
    >>> m = to_like(m, dtype=torch.float32)
    >>> m.weight.dtype, m.w.dtype
    (torch.float32, torch.complex64)
"""

from __future__ import annotations

from typing import TypeVar

import torch
from torch import nn

__all__ = ["to_like"]

M = TypeVar("M", bound=nn.Module)


def to_like(module: M, device: torch.device | None = None, dtype: torch.dtype | None = None) -> M:
    """``module`` on ``device`` with its floating tensors (only) cast to ``dtype``."""
    if device is not None:
        module.to(device=device)
    if dtype is not None:
        module._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)
    return module
