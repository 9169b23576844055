"""A list of sizes kept as its running sums: ``offsets = (0, *np.cumsum(field_dims)[:-1])`` in a
buffer, ``nn.Embedding(sum(field_dims), d)`` one table for every field (DeepFM, DLRM-style
models).

The module keeps no list, but an integer buffer that starts at 0 and never falls holds every
size but the last as the steps between its items; the last is what a layer's size has beyond
the last offset (each integer a layer keeps that exceeds it: an Embedding's ``num_embeddings``).
Each such list is a candidate for an argument the constructor iterates; the rebuild proves it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["running"]

MAX_ITEMS = 256  # offsets longer than this are no list of sizes an argument held
MAX_LISTS = 4


def _offsets(module: nn.Module) -> list[list[int]]:
    out = []
    for _, b in module.named_buffers():
        if b.dim() != 1 or not 1 < b.numel() <= MAX_ITEMS or b.is_meta:
            continue
        if b.dtype not in (torch.int64, torch.int32, torch.int16):
            continue
        v = [int(x) for x in b.tolist()]
        steps = {c - a for a, c in zip(v, v[1:])}
        # An arange (position ids, 0, 1, 2, ...) is no list of sizes: its steps are all one.
        if v[0] == 0 and min(steps) > 0 and steps != {1} and v not in out:
            out.append(v)
    return out


def _sizes(module: nn.Module) -> list[int]:
    """The integers the module's layers keep, largest first (a table's rows)."""
    found: dict[int, None] = {}
    for m in module.modules():
        for k, v in vars(m).items():
            if type(v) is int and v > 0 and not k.startswith("_"):
                found[v] = None
    return sorted(found, reverse=True)


def running(module: nn.Module) -> list[list[Any]]:
    """The lists of sizes whose running sums an integer buffer of ``module`` keeps."""
    out: list[list[Any]] = []
    offsets = _offsets(module)
    sizes = _sizes(module) if offsets else []
    for v in offsets:
        steps = [c - a for a, c in zip(v, v[1:])]
        for total in sizes:
            if total > v[-1]:
                out.append([*steps, total - v[-1]])
            if len(out) >= MAX_LISTS:
                return out
    return out
