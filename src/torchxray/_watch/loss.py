"""The loss a loop passes to ``w.step(loss)``, as a float (``watch.py``).

>>> import torch
>>> number(torch.tensor(0.5)), number(2)
(0.5, 2.0)
"""

from __future__ import annotations

from typing import Any

import torch

from .._text import short_repr

__all__ = ["number"]


def number(loss: Any) -> float:
    """``loss`` (a number or a 1-element tensor) as a float; TypeError naming what it got."""
    if isinstance(loss, torch.Tensor):
        if loss.numel() != 1:
            raise TypeError(
                f"step(loss): the loss must have one element, got shape {tuple(loss.shape)}"
            )
        return float(loss.detach().float().item())
    if isinstance(loss, (int, float)) and not isinstance(loss, bool):
        return float(loss)
    raise TypeError(
        f"step(loss): the loss must be a number or a 1-element tensor, got {short_repr(loss)}"
    )
