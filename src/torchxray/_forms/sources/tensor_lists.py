"""Source: a list of lists the constructor keeps as a tensor of another shape.

Hand-written detection heads keep their anchors so: ``anchors=[[10, 13, 16, 30, 33, 23], ...]``
(one row per feature map, its (w, h) pairs flattened) becomes ``torch.tensor(anchors).float()
.view(nl, -1, 2)``, and the count per map is read off the rows (``len(anchors[0]) // 2``). The
same-named buffer (``attributes.py``) holds the values, not the list: built from the tensor
itself, a row is a list of pairs and the count halves. Where the argument's default is a
sequence, the draft is the tensor's rows flattened (``attributes.draft``); where the constructor
iterates, measures or indexes the argument, its tensor is offered as lists too: each row
flattened first (the shape the rows were written in, mostly), then nested as the tensor holds
them, then flat (``torch.tensor(offsets).view(-1, 2)`` of a flat list of coordinates), then, a
tensor kept flat, in rows of each length that divides it. Whole numbers stay ints. Each is a
candidate the rebuild checks.
"""

from __future__ import annotations

from typing import Any

import torch

from .usage import Usage

__all__ = ["as_lists"]

MAX_ITEMS = 4096  # a tensor larger than this is a weight, not a list someone wrote
MAX_SPLITS = 6  # row counts a flat tensor is offered in (each costs a build where it is tried)


def _plain(t: torch.Tensor) -> list[Any]:
    values = t.detach().cpu()
    if values.is_floating_point() and bool((values == values.round()).all()):
        values = values.long()
    out: list[Any] = values.tolist()
    if values.is_floating_point() and values.dtype != torch.float64:
        out = _short(out, values.dtype)
    return out


def _short(items: Any, dtype: torch.dtype) -> Any:
    """Each float as the shortest decimal the tensor's dtype keeps as the same number (0.485,
    not the 0.48500001430511475 a float32 holds): what a person wrote, rebuilding the same."""
    if isinstance(items, list):
        return [_short(x, dtype) for x in items]
    for digits in range(1, 18):
        x = float(f"{items:.{digits}g}")
        if torch.tensor(x, dtype=dtype).item() == items:
            return x
    return items


def as_lists(values: list[Any], use: Usage | None = None) -> list[Any]:
    """The lists each tensor of ``values`` (a same-named buffer) may have been given as, for an
    argument the constructor reads as a sequence (``use``; None: known to be one, its default
    is)."""
    if use is not None and not (use.sequence or use.indexed):
        return []
    out: list[Any] = []
    for v in values:
        if not isinstance(v, torch.Tensor) or v.dim() < 1 or v.numel() > MAX_ITEMS:
            continue
        if v.is_meta or not v.numel():
            continue
        if v.dim() > 1:
            out += [_plain(v.reshape(v.shape[0], -1)), _plain(v)]
        out.append(_plain(v.reshape(-1)))
        n = v.numel()
        # Kept flat (``.view(-1)``): rows of each length that divides it, the fewest rows first.
        rows = [r for r in range(2, n) if n % r == 0][:MAX_SPLITS]
        out += [_plain(v.reshape(r, -1)) for r in rows if r != (v.shape[0] if v.dim() > 1 else 0)]
    return out
