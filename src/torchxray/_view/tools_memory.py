"""The Memory tab's requests: a subtree's bytes in a fake forward or training step
(``tx.memory`` on the explorer's example inputs), the sizes of the devices present, and one figure
per tree row for colouring the tree. ``session.py`` registers ``HANDLERS`` into its table.

Reports are kept per (training, optimizer) until the model changes (a new ``ModelTree`` after a
patch): switching the tab's options back and forth runs no second fake step.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import torch

from ..memory import MemoryReport, memory

if TYPE_CHECKING:
    from torch import nn

    from ..probe import ProbeReport
    from ..protocol import FiguresRequest, MemoryRequest
    from ..tree import ModelTree
    from .replies import DeviceSize, FiguresReply, MemoryReply, Reply

__all__ = ["HANDLERS", "device_sizes", "on_figures", "on_memory"]

NONE: frozenset[str] = frozenset()
INFERENCE_NOTE = (
    "inference: no gradients, optimizer state or saved activations; the peak counts the "
    "forward's temporaries"
)


class Host(Protocol):
    """What the handlers read of the session (``Session`` has it; no import of it here)."""

    @property
    def model(self) -> nn.Module | None: ...
    @property
    def tree(self) -> ModelTree: ...
    @property
    def args(self) -> tuple[Any, ...]: ...
    @property
    def kwargs(self) -> dict[str, Any]: ...
    @property
    def report(self) -> ProbeReport | None: ...


# Per session: the tree the reports were measured on, and the reports by (training, optimizer).
_CACHE: weakref.WeakKeyDictionary[Any, tuple[ModelTree, dict[tuple[bool, str], MemoryReport]]] = (
    weakref.WeakKeyDictionary()
)


def measure(host: Host, training: bool, optimizer: str) -> MemoryReport:
    """The memory report for these options, measured once per model state."""
    model = host.model
    if model is None:
        raise RuntimeError("this Explorer was closed; call tx.explore(model) again")
    if not host.args and not host.kwargs:
        raise ValueError(
            "memory needs example inputs: tx.explore(model, torch.randn(1, 3, 224, 224)) "
            "(or the keyword inputs a tokenizer gives)"
        )
    cached = _CACHE.get(host)
    if cached is None or cached[0] is not host.tree:
        cached = (host.tree, {})
        _CACHE[host] = cached
    key = (training, optimizer if training else "none")
    rep = cached[1].get(key)
    if rep is None:
        opt = None if key[1] == "none" else key[1]
        rep = memory(model, *host.args, training=training, optimizer=opt, **host.kwargs)
        cached[1][key] = rep
    return rep


def device_sizes() -> list[DeviceSize]:
    """The host's RAM and each CUDA device's total memory."""
    out: list[DeviceSize] = []
    ram = _ram()
    if ram:
        out.append({"name": "CPU RAM", "bytes": ram})
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            out.append({"name": f"cuda:{i} ({props.name})", "bytes": int(props.total_memory)})
    return out


def _ram() -> int:
    try:
        import psutil  # optional: not a dependency

        return int(psutil.virtual_memory().total)
    except ImportError:
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # no sysconf (Windows) or no such name
        return 0


def on_memory(host: Host, req: MemoryRequest) -> tuple[MemoryReply, frozenset[str]]:
    node = host.tree[req["path"]]  # KeyError names close paths
    training = req["training"]
    optimizer = req["optimizer"] if training else "none"
    rep = measure(host, training, optimizer)
    rec = rep[node.path]
    dtypes = list(node.dtypes)
    reply: MemoryReply = {
        "kind": "memory",
        "path": node.path,
        "training": training,
        "optimizer": optimizer,
        "device": rep.device,
        "dtypes": dtypes,
        "params": rec.params + rec.buffers,
        "grads": rec.grads,
        "optimizer_state": rec.optimizer,
        "activations": rec.activations,
        "peak": rec.peak,
        "model_peak": rep.peak,
        "devices": device_sizes(),
        "note": "" if training else INFERENCE_NOTE,
    }
    return reply, NONE


def _activations(host: Host, paths: list[str]) -> tuple[dict[str, float | None], float | None]:
    rep = measure(host, True, "adamw")
    values: dict[str, float | None] = {}
    for p in paths:
        try:
            values[p] = float(rep[p].activations)
        except KeyError:
            values[p] = None
    return values, float(rep.activations)


def on_figures(host: Host, req: FiguresRequest) -> tuple[FiguresReply, frozenset[str]]:
    figure, paths, tree = req["figure"], req["paths"], host.tree
    values: dict[str, float | None] = {}
    total: float | None = None
    note = ""
    if figure in ("params", "bytes"):
        attr = "params_total" if figure == "params" else "bytes_total"
        for p in paths:
            node = tree.get(p)
            values[p] = None if node is None else float(getattr(node, attr))
        total = float(getattr(tree.root, attr))
    elif figure == "activations":
        values, total = _activations(host, paths)
    else:
        report = host.report
        if report is None:
            note = "no probe has run: run one from the Probe tab"
        elif figure == "time" and report.mode == "fake":
            note = "fake probes measure no time: run a real probe from the Probe tab"
        attr = "flops" if figure == "flops" else "time_ms"
        for p in paths:
            rec = report.records.get(p) if report is not None and not note else None
            got = getattr(rec, attr, None) if rec is not None else None
            values[p] = None if got is None else float(got)
        root = report.records.get("") if report is not None and not note else None
        got = getattr(root, attr, None) if root is not None else None
        total = None if got is None else float(got)
    reply: FiguresReply = {
        "kind": "figures",
        "figure": figure,
        "values": values,
        "total": total,
        "note": note,
    }
    return reply, NONE


HANDLERS: dict[str, Callable[[Any, Any], tuple[Reply, frozenset[str]]]] = {
    "memory": on_memory,
    "figures": on_figures,
}
