"""The Training tab's requests and state (listed in ``_view/handlers.py``): a module's history
(``train_series``), Pause / Resume (``train_control``), the tree coloured by a training figure
(``train_figures``), and ``training_state``, the synced ``training`` traitlet. Without a watch
each answers as much as there is (empty series, nothing to pause)."""

from __future__ import annotations

import math

from ..watch import Watch
from . import attach_view
from .host import NONE, Host, States
from .watch_types import (
    FlagRow,
    NonFiniteRow,
    TrainControlReply,
    TrainControlRequest,
    TrainFiguresReply,
    TrainFiguresRequest,
    TrainingState,
    TrainSeriesReply,
    TrainSeriesRequest,
)

__all__ = ["on_train_control", "on_train_figures", "on_train_series", "training_state"]

LOSS_POINTS = 400  # the loss curve sent to the view, thinned evenly (the watch keeps more)
ACTIVE_ROWS = 500  # rows with flag badges sent at most (a model where everything is dead)
RECENT = 12  # the last flags listed in the tab
FIGURES = ("grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros")
NO_WATCH = "no training loop is watched: w = ex.watch(optimizer) before the loop"
CLOSED = (
    "the watch is closed (w.close()) after {steps} steps: its hooks are off the model and "
    "nothing more is recorded; ex.watch(optimizer) opens another"
)


def _thin(points: list[tuple[int, float]], n: int) -> list[tuple[int, float]]:
    if len(points) <= n:
        return points
    step = len(points) / n
    picked = [points[int(i * step)] for i in range(n - 1)]
    return [*picked, points[-1]]


def training_state(w: Watch | None, pausable: bool, note: str = "") -> TrainingState:
    if w is None:
        return {
            "watching": False,
            "step": 0,
            "every": 0,
            "paused": False,
            "pausable": pausable,
            "loss": [],
            "active": {},
            "flag_count": 0,
            "recent": [],
            "nonfinite": None,
            "optimizer": "",
            "note": note or NO_WATCH,
        }
    nf = w.nonfinite
    bad: NonFiniteRow | None = None
    if nf is not None:
        bad = {
            "step": nf.step,
            "path": nf.path,
            "phase": nf.phase,
            "cls": nf.cls,
            "detail": nf.detail,
        }
    active = w.active
    rows = dict(list(active.items())[:ACTIVE_ROWS])
    flags = w.flags
    # A record raised again moves up: the list shows what was raised last.
    latest = sorted(flags, key=lambda f: f.last)[-RECENT:]
    recent: list[FlagRow] = [
        {"step": f.step, "path": f.path, "kind": f.kind, "count": f.count, "last": f.last}
        for f in latest
    ]
    return {
        "watching": not w.closed,
        "step": w.steps,
        "every": w.every,
        "paused": w.paused,
        "pausable": pausable,
        # A NaN/Inf loss is left out of the curve (JSON has neither); the banner says where.
        "loss": [(s, v) for s, v in _thin(w.loss, LOSS_POINTS) if math.isfinite(v)],
        "active": {p: list(k) for p, k in rows.items()},
        "flag_count": len(flags),
        "recent": recent,
        "nonfinite": bad,
        "optimizer": "" if w.optimizer is None else type(w.optimizer).__name__,
        "note": CLOSED.format(steps=w.steps) if w.closed else note,
    }


def _json(v: float) -> float:
    # JSON has no NaN or Infinity: a non-finite loss is drawn as a gap (the banner says why).
    return v if v == v and abs(v) != float("inf") else 0.0


def on_train_series(host: Host, req: TrainSeriesRequest) -> tuple[TrainSeriesReply, States]:
    node = host.tree[req["path"]]  # KeyError names close paths
    if host.job is not None:  # an attached job's figures (tx.explore(..., attach=job))
        return attach_view.series(host, node.path, node.cls), NONE
    w = host.watch
    series: dict[str, list[tuple[int, float]]] = {}
    latest: dict[str, float] = {}
    flags: list[str] = []
    if w is not None:
        got = w[node.path] if node.path in w.paths else None
        for f in FIGURES:
            pts = [] if got is None else getattr(got, f)
            series[f] = [(s, _json(v)) for s, v in pts]
        for f in (*FIGURES, "param_norm"):
            v = w.latest(f).get(node.path)
            if v is not None:
                latest[f] = _json(v)
        flags = list(w.active.get(node.path, ()))
    reply: TrainSeriesReply = {
        "kind": "train_series",
        "path": node.path,
        "cls": node.cls,
        "series": series,
        "latest": latest,
        "flags": flags,
    }
    return reply, NONE


def on_train_control(host: Host, req: TrainControlRequest) -> tuple[TrainControlReply, States]:
    w = host.watch
    if host.job is not None:
        why = "an attached job trains elsewhere: its loop cannot be paused from here"
        return {"kind": "train_control", "paused": False, "message": why}, NONE
    if w is None or w.closed:
        return {"kind": "train_control", "paused": False, "message": NO_WATCH}, NONE
    if req["action"] == "pause":
        w.pause()
        message = f"the loop holds after step {w.steps}: edits apply between steps"
    else:
        w.resume()
        message = "the loop goes on"
    return {"kind": "train_control", "paused": w.paused, "message": message}, NONE


def on_train_figures(host: Host, req: TrainFiguresRequest) -> tuple[TrainFiguresReply, States]:
    if host.job is not None:
        return attach_view.figures(host, req), NONE
    w = host.watch
    figure = req["figure"]
    values: dict[str, float | None] = {}
    got = {} if w is None else w.latest(figure)
    for p in req["paths"]:
        v = got.get(p)
        values[p] = None if v is None else _json(v)
    finite = [v for v in got.values() if v == v and abs(v) != float("inf")]
    # Shares of the largest module's value (act_zeros is a share itself): the tree shows where
    # a figure is high relative to the rest of the model.
    total = 1.0 if figure == "act_zeros" else (max(finite) if finite else None)
    note = NO_WATCH if w is None else ("" if got else "no sample yet: the first step samples")
    if figure != "act_zeros" and total:
        note = note or "colour: the share of the largest module's value"
    reply: TrainFiguresReply = {
        "kind": "train_figures",
        "figure": figure,
        "values": values,
        "total": total,
        "note": note,
    }
    return reply, NONE
