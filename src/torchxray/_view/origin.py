"""The model as the Explorer first saw it, the base of the Diff tab ("against the model as
opened"): references to its tensors, which of its parameters were trainable, and each module's
class and ``extra_repr``, taken once, lazily (``Session.origin``): a walk of every tensor's name
is slow on a big model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

__all__ = ["Opened", "module_table"]


@dataclass(frozen=True)
class Opened:
    """References to the model's tensors (a patch swaps modules and leaves the old tensors as
    they were, so nothing is copied), each module's class and ``extra_repr``, and each
    parameter's ``requires_grad`` then (freezing flips it on the very tensors referenced here)."""

    tensors: Mapping[str, torch.Tensor]
    modules: Mapping[str, tuple[type, str]]
    trainable: Mapping[str, bool] = field(default_factory=dict)

    @classmethod
    def of(cls, model: nn.Module) -> Opened | None:
        """None when the model cannot list its state (a broken ``state_dict`` hook): the
        explorer opens all the same, and the Diff tab says why it has nothing to compare."""
        try:
            grads = {n: p.requires_grad for n, p in model.named_parameters()}
            return cls(model.state_dict(keep_vars=True), module_table(model), grads)
        except Exception:  # noqa: BLE001 - the model's own code must not keep the explorer shut
            return None


def module_table(model: nn.Module) -> dict[str, tuple[type, str]]:
    """Each module's class and ``extra_repr`` by path."""
    out = {}
    for path, m in model.named_modules():
        try:
            text = m.extra_repr()
        except Exception as e:  # noqa: BLE001 - a broken extra_repr must not break a diff
            text = f"<extra_repr raised {type(e).__name__}>"
        out[path] = (type(m), text)
    return out
