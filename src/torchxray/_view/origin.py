"""The model as the Explorer first saw it, the base of the Diff tab ("against the model as
opened"): references to its tensors, which of its parameters were trainable, and each module's
class and ``extra_repr``, taken once, lazily (``Session.origin``): a walk of every tensor's name
is slow on a big model."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import torch
from torch import nn

from .._tree.facts import placeholder
from ..tree import ModelTree

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
    def of(cls, model: nn.Module, tree: ModelTree | None = None) -> Opened | None:
        """None when the model cannot list its state (a broken ``state_dict`` hook): the
        explorer opens all the same, and the Diff tab says why it has nothing to compare.
        `tree`: the model's walk as the explorer opened it, whose classes and ``extra_repr``
        become the module table when the Diff tab first needs it (made here, with the trainable
        flags read through ``named_parameters``, they took 0.6 s of 0.9 s on 100,000 modules,
        in the thread that had just probed: bench/README.md)."""
        try:
            tensors = model.state_dict(keep_vars=True)
            # The parameters' flags as they are now (freezing flips them on these very tensors).
            grads = {n: t.requires_grad for n, t in tensors.items() if isinstance(t, nn.Parameter)}
            table = _Table(tree) if tree is not None else module_table(model)
            return cls(tensors, table, grads)
        except Exception:  # noqa: BLE001 - the model's own code must not keep the explorer shut
            return None


class _Table(Mapping[str, tuple[type, str]]):
    """`module_table` read from a walk, made on first use."""

    def __init__(self, tree: ModelTree) -> None:
        self._tree: ModelTree | None = tree
        self._made: dict[str, tuple[type, str]] = {}

    def _get(self) -> dict[str, tuple[type, str]]:
        tree = self._tree
        if tree is not None:
            self._made = {n.path: (type(tree.module(n.path)), n.extra_repr) for n in tree.nodes}
            self._tree = None
        return self._made

    def __getitem__(self, path: str) -> tuple[type, str]:
        return self._get()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def module_table(model: nn.Module) -> dict[str, tuple[type, str]]:
    """Each module's class and ``extra_repr`` by path (as a walk's nodes give them)."""
    out = {}
    for path, m in model.named_modules():
        try:
            text = m.extra_repr()
            text = text if type(text) is str else str(text)
        except Exception as e:  # noqa: BLE001 - a broken extra_repr must not break a diff
            text = placeholder("extra_repr()", e)
        out[path] = (type(m), text)
    return out
