"""A sampled step's figures stored and judged, module by module (``_watch/record.py`` reads
them): each module's sample into the history (``Series``), its last sample (``latest``) and
the flags it raises or clears (``FlagBook``, ``kinds_of``).

Written for a small model's step as much as a large one's: one pass over the modules, the
history's values written per metric, and the flag book updated only for a module that holds a
flag or raises one (an update with neither changes nothing), because a sampled step of a
784-256-256-10 MLP spent a tenth of its cost here (bench/README.md, issue 55).
"""

from __future__ import annotations

import math

from .buffer import Series
from .flags import Flag, FlagBook, Thresholds, kinds_of

__all__ = ["EARLY", "ActOf", "Samples"]

# Each module's output figures (mean, RMS, share non-zero[, share at a bound]) and whether the
# output was its own.
ActOf = dict[str, tuple[list[float], bool]]

EARLY = 3  # samples of a module's output whose largest RMS the magnitude flag compares with


class Samples:
    """The history, flags and last sample of every module a watch follows."""

    def __init__(self, thresholds: Thresholds, capacity: int) -> None:
        self.thresholds = thresholds
        self.series = Series(capacity)
        self.flags = FlagBook(clear_after=thresholds.clear_after)
        self.latest: dict[str, dict[str, float]] = {}  # exact last sample per module
        self.early: dict[str, list[float]] = {}  # each module's first output RMS figures

    def add(
        self,
        step: int,
        order: dict[str, int],
        weights: tuple[dict[str, float], dict[str, float], dict[str, float]],
        act_of: ActOf,
    ) -> list[Flag]:
        """Store step ``step``'s sample of each module (``weights``: its gradient norm, weight
        norm and update ratio by path; ``act_of``: its output's mean, RMS, share non-zero[,
        share at a bound] and whether the output was its own), in forward ``order``; returns
        the flags that start to hold."""
        series, flags, thresholds = self.series, self.flags, self.thresholds
        series.open(step)
        new: list[Flag] = []
        grads, params, updates = weights
        # Each metric's rows and values, written in one go (``Series.put_all``).
        cols: dict[str, tuple[list[int], list[float]]] = {m: ([], []) for m in series.metrics}
        upstream = 1.0  # the largest output growth among the modules that ran before
        for path in sorted(grads.keys() | act_of.keys(), key=lambda p: order.get(p, 1 << 30)):
            sample: dict[str, float] = {}
            own = None
            if path in grads:
                sample["grad_norm"] = grads[path]
                sample["param_norm"] = params.get(path, 0.0)
            if path in updates:
                sample["update_ratio"] = updates[path]
            if path in act_of:
                vals, own = act_of[path]
                mean, rms, nonzero = vals[0], vals[1], vals[2]
                std = math.sqrt(max(rms * rms - mean * mean, 0.0)) if math.isfinite(rms) else rms
                sample["act_mean"], sample["act_std"] = mean, std
                sample["act_zeros"] = 1.0 - nonzero
                if len(vals) > 3:
                    sample["saturated"] = vals[3]
            row = series.row(path)
            for metric, (rows, got) in cols.items():
                v = sample.get(metric)
                if v is not None:
                    rows.append(row)
                    got.append(v)
            if own is not None:
                growth = self.growth(path, rms)
                if growth is not None:
                    sample["act_growth"], sample["act_growth_in"] = growth, upstream
                    upstream = max(upstream, growth)
            self.latest[path] = sample
            held = flags.holding(path)
            kinds = kinds_of(sample, thresholds, held, own=own)
            if kinds or held:  # else nothing holds nor starts: ``update`` would change nothing
                new += flags.update(step, path, kinds)
        for metric, (rows, got) in cols.items():
            series.put_all(metric, rows, got)
        return new

    def growth(self, path: str, rms: float) -> float | None:
        """The output's RMS over the largest of its first `EARLY` samples' (None until they are
        in, or when they were all 0): the magnitude flag's figure."""
        early = self.early.setdefault(path, [])
        if len(early) < EARLY:
            if math.isfinite(rms):
                early.append(rms)
            return None
        base = max(early)
        return rms / base if base > 0 else None
