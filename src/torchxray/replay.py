"""Helpers the code of ``PatchLog.to_code()`` calls, so a replay script starts with its patches.

    >>> import torch.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8).double().eval())
    >>> new = place(nn.Linear(4, 16), model, "0")
    >>> new.weight.dtype, new.training
    (torch.float64, False)

Public and stable: a saved replay script keeps working with later torchxray versions.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import torch
from torch import nn

from ._cast import to_like

__all__ = ["carry", "config", "place"]

M = TypeVar("M", bound=nn.Module)


def place(new: M, model: nn.Module, path: str, cast: bool = True) -> M:
    """Give ``new`` the device and floating dtype of the module at ``path`` (or of its nearest
    ancestor holding tensors; not when ``cast`` is False) and that module's train/eval mode, as
    torchxray's PatchLog did. A ``new`` holding meta tensors stays on meta."""
    parts = path.split(".") if path else []
    mode = model.get_submodule(path).training
    for i in range(len(parts), -1, -1):
        ref = model.get_submodule(".".join(parts[:i]))
        found = list(itertools.chain(ref.parameters(), ref.buffers()))
        if found:
            floats = [t for t in found if t.is_floating_point()]
            on_meta = any(t.is_meta for t in itertools.chain(new.parameters(), new.buffers()))
            if cast and not on_meta:
                to_like(new, found[0].device, floats[0].dtype if floats else None)
            break
    return new.train(mode)


def config(base: Any, changes: Mapping[str, Any]) -> Any:
    """A copy of ``base`` (a config the model's layers share, never changed itself) with
    ``changes`` set, as torchxray's form built it."""
    new = copy.deepcopy(base)
    try:
        for name, value in changes.items():
            setattr(new, name, value)
    except dataclasses.FrozenInstanceError:
        return dataclasses.replace(base, **changes)
    return new


@torch.no_grad()
def carry(new: nn.Module, old: nn.Module, names: Iterable[str]) -> None:
    """Copy the named parameters and buffers (same name, same shape) from ``old`` into ``new``,
    with their ``requires_grad``."""
    src = dict(itertools.chain(old.named_parameters(), old.named_buffers()))
    dst = dict(itertools.chain(new.named_parameters(), new.named_buffers()))
    for name in names:
        dst[name].copy_(src[name])
        dst[name].requires_grad_(src[name].requires_grad)
