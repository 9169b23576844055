"""The Training tab fed by a training job (``tx.explore(model, attach=job)`` or
``tx.explore(job)``): the synced ``training`` state made from the job's ranks (``attach_state``),
the view's polls (``train_poll``), and the figures and series requests answered from the job
rather than a local watch (``tools_watch.py`` hands them here when the session has a job).

The view polls (a timer in the browser sends ``train_poll``): nothing in the kernel runs between
polls, so a notebook attached to a job has no thread of torchxray's taking its time.

A rank is shown, or the worst-rank view (``rank`` None): each row's value is the largest over the
ranks (a NaN counts as the largest), with the rank it came from, and the loss, flags and badges
are those of the rank that looks worst (its first NaN, then the flags it holds).

    >>> kwargs = {"attach": 1}
    >>> take_job("model", kwargs, True), kwargs
    (('model', None, True), {'attach': 1})
"""

from __future__ import annotations

import math
from typing import Any

from ..attach import Job
from .host import NONE, Host, States
from .watch_types import (
    AttachedState,
    FlagRow,
    NonFiniteRow,
    RankLatest,
    TrainFiguresReply,
    TrainFiguresRequest,
    TrainingState,
    TrainPollReply,
    TrainPollRequest,
    TrainSeriesReply,
)

__all__ = ["POLL_MS", "attach_state", "figures", "on_train_poll", "series", "show", "take_job"]

POLL_MS = 500  # the view's poll: 2 Hz (bench/attach.py measures the job's step time under it)
SPARK = 24  # samples per row's sparkline
RECENT = 12
STAND_IN = (
    "the job's model as it published its tree (weights on the meta device, no forward): nothing "
    "to probe here; tx.explore(model, attach=job) with a copy of the model probes it"
)
TRAINING = "training"
_FIGURES = ("grad_norm", "update_ratio", "act_std", "act_zeros")


def take_job(model: Any, kwargs: dict[str, Any], probe: bool) -> tuple[Any, Job | None, bool]:
    """``(model, job, probe)`` for ``explore``: ``explore(job)`` explores the job's published tree
    (a stand-in: no probe); ``attach=job`` feeds the Training tab (an ``attach`` keyword of another
    value stays the forward's)."""
    if isinstance(model, Job):
        return model.model(), model, False
    job = kwargs.get("attach")
    if isinstance(job, Job):
        del kwargs["attach"]
        return model, job, probe
    return model, None, probe


def show(explorer: Any, session: Any, job: Job | None) -> None:
    """Link ``job`` to the Explorer's session: the Training tab's state, and the stand-in's note."""
    if job is None:
        return
    session.job = job
    explorer.training = dict(attach_state(session))
    if getattr(type(session.model), "stand_in", False):  # explore(job): `_attach/skeleton.py`
        session.probe_note = STAND_IN


def _worse(v: float) -> float:
    return math.inf if math.isnan(v) else v


def _json(v: float) -> float:
    return v if math.isfinite(v) else 0.0


def worst_rank(job: Job) -> int | None:
    scores = {r: job.rank(r).bad() for r in job.ranks}
    best = max(scores.values(), default=0.0)
    return None if best <= 0 else min(r for r, s in scores.items() if s == best)


def _shown(host: Host, job: Job) -> int:
    """The rank whose loss, flags and badges are shown (the worst one in the worst-rank view)."""
    rank = host.attach_rank
    if rank is not None and rank in job.ranks:
        return rank
    worst = worst_rank(job)
    return worst if worst is not None else job.ranks[0]


def attach_state(host: Host) -> TrainingState:
    job: Job = host.job
    shown = job.rank(_shown(host, job))
    worst = worst_rank(job)
    nf = job.first_nonfinite if not job.closed else None
    bad: NonFiniteRow | None = None
    if nf is not None:
        bad = {"step": nf.step, "path": nf.module, "phase": nf.phase, "cls": nf.cls,
               "detail": nf.detail, "rank": nf.rank}  # fmt: skip
    if host.attach_rank is None:  # every rank's flags, the last raised
        flags = [(r, f) for r in job.ranks for f in job.rank(r).flags]
    else:
        flags = [(shown.rank, f) for f in shown.flags]
    recent: list[FlagRow] = [
        {
            "step": f.step,
            "path": f.path,
            "kind": f.kind,
            "count": f.count,
            "last": f.last,
            "rank": r,
        }
        for r, f in sorted(flags, key=lambda rf: rf[1].last)[-RECENT:]
    ]
    ended = job.ended
    if ended and job.ended_exactly:
        note = f"job ended at step {job.ended_at}: the last figures stay"
    elif ended:
        note = (
            f"job ended: its ranks stopped answering after step {job.ended_at} (the last step "
            "seen; a watch not closed says no more); the last figures stay"
        )
    elif job.closed:
        note = "detached (job.close()): the figures read so far stay"
    else:
        away = [r for r in job.ranks if job.rank(r).state in ("slow", "gone")]
        note = f"rank {', '.join(map(str, away))} did not answer the last poll" if away else ""
    attached: AttachedState = {
        "address": job.address,
        "world": job.world_size,
        "ranks": job.ranks,
        "rank": host.attach_rank,
        "worst": worst,
        "steps": {str(r): job.rank(r).done for r in job.ranks},
        "states": {str(r): job.rank(r).state for r in job.ranks},
        "ended": ended,
        "ended_at": job.ended_at,
        "ended_exactly": job.ended_exactly,
        "poll_ms": POLL_MS,
        "polls": job.polls,
    }
    return {
        "watching": not ended and not job.closed,
        "step": shown.done,
        "every": shown.every,
        "paused": False,
        "pausable": False,
        "loss": [(s, v) for s, v in shown.loss if math.isfinite(v)][-400:],
        "active": {p: list(k) for p, k in shown.active.items()},
        "flag_count": len(flags),
        "recent": recent,
        "nonfinite": bad,
        "optimizer": "",
        "note": note,
        "attached": attached,
    }


def on_train_poll(host: Host, req: TrainPollRequest) -> tuple[TrainPollReply, States]:
    job: Job | None = host.job
    if job is None:
        reply: TrainPollReply = {"kind": "train_poll", "changed": False, "ended": False,
                                 "message": "no job is attached: tx.explore(model, attach=job)"}  # fmt: skip
        return reply, NONE
    rank = req["rank"]
    if rank is not None and rank not in job.ranks:
        raise KeyError(f"no rank {rank} publishes in this job; ranks: {job.ranks}")
    moved = rank != host.attach_rank
    host.attach_rank = rank
    changed = job.poll() if not job.closed and not job.ended else False
    away = [f"rank {r}: {job.rank(r).state}" for r in job.ranks if job.rank(r).state == "slow"]
    reply = {"kind": "train_poll", "changed": changed or moved, "ended": job.ended or job.closed,
             "message": "; ".join(away)}  # fmt: skip
    return reply, frozenset({TRAINING}) if changed or moved else NONE


def _value(job: Job, rank: int | None, path: str, figure: str) -> tuple[float | None, int | None]:
    if rank is not None:
        v = job.rank(rank).value(path, figure)
        return v, None if v is None else rank
    got = [(v, r) for r in job.ranks if (v := job.rank(r).value(path, figure)) is not None]
    if not got:
        return None, None
    worst = worst_rank(job)  # a tie (every rank NaN) goes to the rank that looks worst
    v, r = max(got, key=lambda vr: (_worse(vr[0]), vr[1] == worst, -vr[1]))
    return v, r


def figures(host: Host, req: TrainFiguresRequest) -> TrainFiguresReply:
    job: Job = host.job
    figure, rank = req["figure"], host.attach_rank
    values: dict[str, float | None] = {}
    whose: dict[str, int] = {}
    spark: dict[str, list[float]] = {}
    for p in req["paths"]:
        v, r = _value(job, rank, p, figure)
        values[p] = None if v is None else _json(v)
        if r is not None:
            whose[p] = r
            pts = [x for _, x in job.rank(r).series(p, figure)[-SPARK:] if math.isfinite(x)]
            if len(pts) > 1:  # a NaN/Inf sample is a gap (the row's NaN badge says so)
                spark[p] = pts
    last = [v for r in job.ranks for v in job.rank(r).latest(figure).values()]
    every = [v for v in last if math.isfinite(v)]
    total = 1.0 if figure == "act_zeros" else (max(every) if every else None)
    which = "the largest over the ranks" if rank is None else f"rank {rank}"
    note = "" if every else "no sample yet: the ranks' first steps sample"
    if last and not every:
        note = "every module's last value is NaN/Inf (the first NaN/Inf: the Training tab)"
    if total and figure != "act_zeros":
        note = f"colour: the share of the largest module's value ({which})"
    return {"kind": "train_figures", "figure": figure, "values": values, "total": total,
            "note": note, "ranks": {p: r for p, r in whose.items()}, "spark": spark}  # fmt: skip


def series(host: Host, path: str, cls: str) -> TrainSeriesReply:
    job: Job = host.job
    rank = host.attach_rank
    if rank is None:  # the rank where this module looks worst: its gradient norm, else its output
        _, rank = _value(job, None, path, "grad_norm")
        if rank is None:
            _, rank = _value(job, None, path, "act_std")
    hist = job.rank(rank if rank is not None else job.ranks[0])
    # JSON has no NaN or Inf: a non-finite sample is a gap in the sparkline, and the module's
    # "nonfinite" flag (or the rank table's NaN/Inf) says what it was.
    out = {f: [(s, v) for s, v in hist.series(path, f) if math.isfinite(v)] for f in _FIGURES}
    latest = {
        f: v
        for f in (*_FIGURES, "param_norm")
        if (v := hist.value(path, f)) is not None and math.isfinite(v)
    }
    ranks: list[RankLatest] = []
    for r in job.ranks:
        got = {f: job.rank(r).value(path, f) for f in _FIGURES}
        bad = [f for f, v in got.items() if v is not None and not math.isfinite(v)]
        ranks.append({"rank": r, "grad_norm": _maybe(got["grad_norm"]),
                      "update_ratio": _maybe(got["update_ratio"]), "act_std": _maybe(got["act_std"]),
                      "act_zeros": _maybe(got["act_zeros"]), "nonfinite": bad})  # fmt: skip
    return {"kind": "train_series", "path": path, "cls": cls, "series": out, "latest": latest,
            "flags": list(hist.active.get(path, ())), "rank": hist.rank, "ranks": ranks}  # fmt: skip


def _maybe(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None
