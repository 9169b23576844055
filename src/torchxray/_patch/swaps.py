"""The one way a PatchLog changes a model: slot swaps, applied all or none.

A ``Swap`` names ``parent._modules[key]`` and the modules before and after. A swap with no parent
is the model itself (an edit of the root): its owner's ``model`` attribute changes, the user's own
variable keeps the model as it was, and undo puts that object back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.nn as nn

__all__ = ["Swap", "apply", "reverse"]


@dataclass(frozen=True, slots=True)
class Swap:
    parent: nn.Module | None  # None: the model itself, held by the owner's ``model``
    key: str
    old: nn.Module
    new: nn.Module


def reverse(swaps: tuple[Swap, ...]) -> list[Swap]:
    return [Swap(s.parent, s.key, s.new, s.old) for s in reversed(swaps)]


def _current(s: Swap, owner: Any) -> nn.Module | None:
    return owner.model if s.parent is None else s.parent._modules.get(s.key)


def _set(s: Swap, owner: Any, module: nn.Module) -> None:
    if s.parent is None:
        owner.model = module
    else:
        # Direct slot assignment: keeps the key's position, skips __setattr__ overrides, and is
        # exactly reversible (setattr would also drop same-named params/buffers).
        s.parent._modules[s.key] = module


def apply(swaps: list[Swap], owner: Any) -> None:
    """Assign every slot; on any failure (even KeyboardInterrupt) put back those already done."""
    for s in swaps:
        if _current(s, owner) is not s.old:
            where = "the model" if s.parent is None else f"{s.key!r} in a {type(s.parent).__name__}"
            raise RuntimeError(
                f"the module registered as {where} was changed outside this PatchLog; undo/redo "
                "would overwrite that change, so nothing was done"
            )
    done: list[Swap] = []
    try:
        for s in swaps:
            _set(s, owner, s.new)
            done.append(s)
    except BaseException:
        for s in reversed(done):
            _set(s, owner, s.old)
        raise
