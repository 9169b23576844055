"""Timing primitives: medians over repeats, with a time budget so slow anchors do not stall a run."""

from __future__ import annotations

import gc
import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timing:
    """Seconds per run. `first` is the cold run; `median` is over all runs including it."""

    runs: list[float] = field(default_factory=list)
    error: str | None = None
    # Timings measured together by `measure_interleaved` share a group: their i-th runs were made
    # moments apart, so a ratio can be taken run by run.
    group: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs) if self.runs else float("nan")

    @property
    def first(self) -> float:
        return self.runs[0] if self.runs else float("nan")


_GROUPS = itertools.count()


def measure(
    fn: Callable[[], Any],
    repeats: int,
    budget_s: float = 60.0,
    before: Callable[[], Any] | None = None,
    after: Callable[[Any], Any] | None = None,
    warmup: int = 0,
) -> Timing:
    """Run `fn` up to `repeats` times; stop early once `budget_s` of measured time is spent.

    `before` and `after(result)` run outside the timed region (e.g. undo an edit, close a widget).
    A failure is recorded, not raised: one broken figure must not sink the whole table.
    `warmup` untimed runs come first (oneDNN and the allocator are slow on the first forward).
    """
    t = Timing()
    spent = 0.0
    for i in range(warmup + repeats):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        try:
            result = fn()
        except Exception as exc:  # recorded in the table as the figure's value
            t.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''}"
            return t
        elapsed = time.perf_counter() - start
        if i >= warmup:
            t.runs.append(elapsed)
        spent += elapsed
        if after is not None:
            after(result)
        del result
        if spent > budget_s:
            break
    return t


def ms(seconds: float) -> str:
    if seconds != seconds:  # nan
        return "n/a"
    if seconds >= 10:
        return f"{seconds:.1f} s"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.3g} ms" if seconds >= 0.001 else f"{seconds * 1e6:.3g} µs"


def ratio(ours: Timing, anchor: Timing) -> float:
    """Median of run-by-run ratios for interleaved timings (robust to load that changes during the
    run), else the ratio of the medians."""
    if not (ours.ok and anchor.ok) or anchor.median == 0:
        return float("nan")
    if ours.group is not None and ours.group == anchor.group and len(ours.runs) == len(anchor.runs):
        return statistics.median(a / b for a, b in zip(ours.runs, anchor.runs) if b > 0)
    return ours.median / anchor.median


def measure_interleaved(
    fns: dict[str, Callable[[], Any]],
    repeats: int,
    budget_s: float = 60.0,
    warmup: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    alternate: bool = False,
) -> dict[str, Timing]:
    """Like `measure`, for several functions run in turn within each repeat, so that a change in
    machine load (another process, thermal throttling) hits every figure of a ratio alike.
    `alternate`: every other repeat runs them in reverse order (what runs first after a
    collection is not always the same one). `clock`: `time.thread_time` times the CPU this thread
    used, which leaves out the waits for a core that other processes hold (for single-threaded
    work on a shared machine)."""
    group = next(_GROUPS)
    out = {name: Timing(group=group) for name in fns}
    spent = 0.0
    for i in range(warmup + repeats):
        order = list(fns.items())
        if alternate and i % 2:
            order.reverse()
        for name, fn in order:
            t = out[name]
            if t.error is not None:
                continue
            gc.collect()
            start = clock()
            try:
                result = fn()
            except Exception as exc:  # recorded as the figure's value, as in `measure`
                first = str(exc).splitlines()[0][:120] if str(exc) else ""
                t.error = f"{type(exc).__name__}: {first}"
                continue
            elapsed = clock() - start
            del result
            if i >= warmup:
                t.runs.append(elapsed)
            spent += elapsed
        if spent > budget_s and i >= warmup:
            break
    return out
