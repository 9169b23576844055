"""The summary's totals, as plain data: parameters (total, trainable, shared), mult-adds from the
fake probe's FLOP counts, and sizes in bytes.

Parameters come from the walk (``Node.params_total``): a tensor reached through two modules (tied
embeddings) counts once, as ``sum(p.numel() for p in model.parameters())`` does; torchinfo 1.8
counts it once per module, so its total is ``params + shared``. Mult-adds are half the FLOPs
(torch's formulas count a multiply-add as two). The sizes follow torchinfo's: the inputs, the
forward/backward pass (torchinfo 1.8's rule: the outputs of every call of a leaf module that
holds parameters, twice, once for the gradients; activations, pooling and dropout are left out,
so it is no measure of a step's memory: ``tx.memory`` is; torchinfo reads only the first tensor
of a tuple output, an LSTM's, where this counts them all), the parameters and, apart, the
buffers (the total adds them; torchinfo's leaves them out).

    >>> import torch, torch.nn as nn
    >>> from torchxray import probe, walk
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8))
    >>> t = totals(walk(model), probe(model, torch.randn(2, 4)))
    >>> t.params, t.trainable, t.mult_adds, t.input_bytes, t.param_bytes, t.buffer_bytes
    (56, 56, 64, 32, 224, 72)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from ..probe import TensorInfo

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..probe import ProbeReport
    from ..tree import ModelTree

__all__ = ["Totals", "nbytes", "totals"]


@dataclass(frozen=True, slots=True)
class Totals:
    modules: int
    params: int  # shared tensors once
    trainable: int
    shared: int  # parameters counted once here that more than one module holds
    exact: bool  # False when lazy (uninitialised) parameters counted as 0
    mult_adds: int | None  # None: no FLOP count (no inputs, a real probe, a failed one)
    input_bytes: int | None  # None without a probe
    pass_bytes: int | None  # outputs of leaf modules with parameters x2 (torchinfo's rule)
    param_bytes: int
    buffer_bytes: int

    @property
    def non_trainable(self) -> int:
        return self.params - self.trainable

    @property
    def total_bytes(self) -> int:
        return (
            (self.input_bytes or 0) + (self.pass_bytes or 0) + self.param_bytes + self.buffer_bytes
        )


_ITEMSIZE: dict[str, int] = {}


def _itemsize(dtype: str) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        dt = getattr(torch, dtype, None)
        size = dt.itemsize if isinstance(dt, torch.dtype) else 0
        _ITEMSIZE[dtype] = size
    return size


def nbytes(leaves: Iterable[TensorInfo | str]) -> int:
    """Bytes of the tensors among a call's leaves (their shapes and dtypes)."""
    total = 0
    for leaf in leaves:
        if isinstance(leaf, TensorInfo):
            n = 1
            for d in leaf.shape:
                n *= d
            total += n * _itemsize(leaf.dtype)
    return total


def _buffer_bytes(tree: ModelTree) -> int:
    total = 0
    for b in tree.module("").buffers():  # each buffer once, as named_buffers() dedups them
        try:
            total += b.numel() * b.element_size()
        except Exception:  # noqa: BLE001 - an exotic tensor subclass: counted as nothing
            continue
    return total


def totals(tree: ModelTree, report: ProbeReport | None) -> Totals:
    root = tree.root
    nodes = tree.nodes
    buffers = _buffer_bytes(tree)
    mult_adds = input_bytes = pass_bytes = None
    if report is not None:
        if report.total_flops is not None:
            mult_adds = report.total_flops // 2
        if "" in report:
            input_bytes = nbytes(report[""].inputs)
        pass_bytes = 0
        for node in nodes:
            # torchinfo's figure under its label: leaf layers that hold parameters only (an
            # activation or a pooling layer is left out), so the two summaries can be compared.
            if not node.children and node.params_total and node.path in report:
                for call in report[node.path].call_records:
                    pass_bytes += 2 * nbytes(call.outputs)
    return Totals(
        modules=len(nodes),
        params=root.params_total,
        trainable=root.trainable_total,
        shared=max(sum(n.params_own for n in nodes) - root.params_total, 0),
        exact=root.params_exact,
        mult_adds=mult_adds,
        input_bytes=input_bytes,
        pass_bytes=pass_bytes,
        param_bytes=max(root.bytes_total - buffers, 0),
        buffer_bytes=buffers,
    )
