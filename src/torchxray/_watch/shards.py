"""A sharded weight's local part: what the lens reads of a DTensor (FSDP2, tensor parallel).

Why local: a norm of a DTensor is itself a DTensor whose value needs the other ranks (reading it
all-reduces), so a watch on a sharded model would issue a collective on each rank at its own
moments, which nothing in the training loop matches. The watch reads each rank's own shard
instead (no collective, ever); a notebook combines the ranks' figures (``tx.attach``).

    >>> import torch
    >>> t = torch.ones(3)
    >>> local(t) is t
    True
"""

from __future__ import annotations

import torch

__all__ = ["has_dtensors", "local"]


def has_dtensors(model: torch.nn.Module) -> bool:
    """Whether any weight of ``model`` is a DTensor (FSDP2, tensor parallel)."""
    return any(getattr(p, "placements", None) is not None for p in model.parameters())


def local(t: torch.Tensor) -> torch.Tensor:
    """``t``'s local shard when it is a DTensor (no communication), else ``t``."""
    inner = getattr(t, "_local_tensor", None)
    return inner if isinstance(inner, torch.Tensor) else t


# What a non-finite finding says of a sharded model (``record.py``): its step is not replayed.
NOT_REPLAYED = (
    " (a sharded model's step is not run again, which would all-gather on this rank alone: the "
    "module is the last in forward order whose gradients hold NaN/Inf; it may have begun before)"
)
