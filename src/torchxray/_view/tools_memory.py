"""The Memory tab's requests: a subtree's bytes in a fake forward or training step
(``tx.memory`` on the explorer's example inputs), the sizes of the devices present, and one figure
per tree row for colouring the tree (listed in ``_view/handlers.py``).

Reports are kept on the session per (training, optimizer) until the model changes (a new
``ModelTree`` after a patch): switching the tab's options back and forth runs no second fake step.
"""

from __future__ import annotations

import os

import torch

from ..memory import MemoryReport, memory
from ..protocol import FiguresRequest, MemoryRequest
from .host import NONE, Host, States
from .replies import DeviceSize, FiguresReply, MemoryReply

__all__ = ["device_sizes", "measure", "on_figures", "on_memory"]

INFERENCE_NOTE = (
    "inference: no gradients, optimizer state or saved activations; the peak counts the "
    "forward's temporaries"
)


def measure(host: Host, training: bool, optimizer: str) -> MemoryReport:
    """The memory report for these options, measured once per model state."""
    model = host.live_model()
    if not host.args and not host.kwargs:
        raise ValueError(
            "memory needs example inputs: tx.explore(model, torch.randn(1, 3, 224, 224)) "
            "(or the keyword inputs a tokenizer gives)"
        )
    reports: dict[tuple[bool, str], MemoryReport] = host.caches.get("memory", host.tree, dict)
    key = (training, optimizer if training else "none")
    rep = reports.get(key)
    if rep is None:
        opt = None if key[1] == "none" else key[1]
        rep = memory(model, *host.args, training=training, optimizer=opt, **host.kwargs)
        reports[key] = rep
    if rep.error is not None:  # no step ran: the tab shows why, as for a failed forward
        raise ValueError(f"memory(): {rep.error}")
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


def on_memory(host: Host, req: MemoryRequest) -> tuple[MemoryReply, States]:
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
        # How the figures were made where it was not the fake step (a data-dependent op: a real
        # CPU run), then why activations are 0 in inference.
        "note": " ".join([*rep.notes, *([] if training else [INFERENCE_NOTE])]),
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


def on_figures(host: Host, req: FiguresRequest) -> tuple[FiguresReply, States]:
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
