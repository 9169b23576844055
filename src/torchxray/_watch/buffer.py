"""Bounded per-module history of the lens's samples: ``Series``, one float16 row per module and
metric over a timeline of sampled steps shared by all modules.

Why thinned, not a ring: a ring forgets the start of the run, which is where a person looks for
when things went wrong. When the timeline is full, every other sample is dropped and the stride
doubles, so the buffer always spans the whole run at a resolution that halves as it grows
(``CAPACITY`` points per module and metric at most). Flags and ``w.nonfinite`` are decided on the
exact values as they are sampled; only the history kept for plots is thinned and rounded.

Why float16 of a log: a gradient norm spans 1e-12..1e6 and float16 overflows at 65504; the log10
of a positive metric (grad norm, update ratio, activation std) keeps ~0.5% relative precision over
any range, ``asinh`` does the same for the signed activation mean, and the zero fraction (0..1) is
stored as is. 0 is -inf in log space and comes back as 0; NaN and Inf come back as themselves. A
slot with no value holds a NaN of another bit pattern (``_MISSING``), so a NaN sample stays one.

    >>> s = Series(capacity=4)
    >>> for step in range(1, 7):
    ...     _ = s.open(step)
    ...     s.put(s.row("fc"), "grad_norm", 10.0 ** step)
    >>> s.stride, [p for p, _ in s.points("fc", "grad_norm")]
    (2, [1, 3, 5])
    >>> round(s.points("fc", "grad_norm")[-1][1])
    100000
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CAPACITY", "LOSS_CAPACITY", "METRICS", "LossBuffer", "Series"]

# The metrics kept per module, in storage order; ``encode``/``decode`` by kind.
METRICS = ("grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros")
_LOG = frozenset({"grad_norm", "update_ratio", "act_std"})
_ASINH = frozenset({"act_mean"})
# 96 points x 5 metrics x 2 bytes = 960 bytes per module: under 1 MB per 1,000 modules however
# long the run (bench/README.md measures it at 1,000 samples).
CAPACITY = 96
LOSS_CAPACITY = 2048
_FEW = 32  # rows ``put_all`` writes one by one
_MISSING = np.uint16(0x7E01)  # a quiet NaN with a payload: "no value" (a NaN sample is 0x7E00)


def encode(metric: str, value: float) -> float:
    if metric in _LOG:
        if value == 0:
            return -math.inf
        return math.log10(value) if value > 0 and math.isfinite(value) else value
    if metric in _ASINH:
        return math.asinh(value) if math.isfinite(value) else value
    return value


def encode_all(metric: str, values: list[float]) -> np.ndarray:
    """``encode`` of each value, as one array."""
    v = np.asarray(values, dtype=np.float64)
    if metric in _LOG:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where((v > 0) & np.isfinite(v), np.log10(np.where(v > 0, v, 1.0)), v)
        out[v == 0] = -math.inf
        return out
    if metric in _ASINH:
        return np.where(np.isfinite(v), np.arcsinh(np.where(np.isfinite(v), v, 0.0)), v)
    return v


def decode(metric: str, stored: float) -> float:
    if metric in _LOG:
        if stored == -math.inf:
            return 0.0
        return 10.0**stored if math.isfinite(stored) else stored
    if metric in _ASINH:
        return math.sinh(stored) if math.isfinite(stored) else stored
    return stored


class Series:
    """Samples per (module, metric) on one shared, thinned timeline of steps."""

    def __init__(self, capacity: int = CAPACITY, metrics: tuple[str, ...] = METRICS) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity must be an even number >= 2, got {capacity}")
        self.capacity = capacity
        self.metrics = metrics
        self.steps = np.zeros(capacity, dtype=np.int64)
        self.n = 0  # columns used
        self.stride = 1  # a sample is kept when its index is a multiple of this
        self.taken = 0  # samples offered to `open`, kept or not
        self._rows: dict[str, int] = {}
        # One array (metric, row, column); ``_values`` views each metric's part of it.
        self._all = _empty((len(metrics), 8, capacity))
        self._values = self._views()
        self._col: int | None = None  # the column of the sample being written, if kept

    # -- writing ---------------------------------------------------------------------------

    def open(self, step: int) -> bool:
        """Start the sample of ``step``; False when the thinning drops it (``put`` then ignores
        values until the next ``open``)."""
        index, self.taken = self.taken, self.taken + 1
        if index % self.stride:
            self._col = None
            return False
        if self.n == self.capacity:
            self._thin()
            if index % self.stride:
                self._col = None
                return False
        self._col = self.n
        self.steps[self.n] = step
        self._all.view(np.uint16)[:, :, self.n] = _MISSING  # one op for every metric
        self.n += 1
        return True

    def row(self, path: str) -> int:
        """The row of ``path``, added (empty before now) on first use."""
        r = self._rows.get(path)
        if r is None:
            r = self._rows[path] = len(self._rows)
            old = self._all
            if r >= old.shape[1]:
                self._all = _empty((old.shape[0], 2 * old.shape[1], self.capacity))
                self._all[:, : old.shape[1]] = old
                self._values = self._views()
        return r

    def _views(self) -> dict[str, np.ndarray]:
        return {m: self._all[i] for i, m in enumerate(self.metrics)}

    def put(self, row: int, metric: str, value: float) -> None:
        if self._col is not None:
            self._values[metric][row, self._col] = encode(metric, value)

    def put_all(self, metric: str, rows: list[int], values: list[float]) -> None:
        """``put`` of many rows of one metric at once (a sampled step writes every module's)."""
        col = self._col
        if col is None or not rows:
            return
        if len(rows) <= _FEW:  # numpy's call costs more than a few values one by one
            into = self._values[metric]
            for r, v in zip(rows, values, strict=True):
                into[r, col] = encode(metric, v)
            return
        self._values[metric][rows, col] = encode_all(metric, values)

    def _thin(self) -> None:
        keep = slice(0, self.capacity, 2)
        half = self.capacity // 2
        self.steps[:half] = self.steps[keep].copy()
        self._all[:, :, :half] = self._all[:, :, keep].copy()
        self._all.view(np.uint16)[:, :, half:] = _MISSING
        self.n = half
        self.stride *= 2

    # -- reading ---------------------------------------------------------------------------

    def paths(self) -> list[str]:
        return list(self._rows)

    def points(self, path: str, metric: str) -> list[tuple[int, float]]:
        """(step, value) of every kept sample of ``metric`` at ``path`` that has a value."""
        r = self._rows.get(path)
        if r is None:
            return []
        stored = self._values[metric][r, : self.n]
        have = stored.view(np.uint16) != _MISSING
        steps = self.steps[: self.n]
        return [
            (int(s), decode(metric, float(v)))
            for s, v, ok in zip(steps, stored.astype(np.float64), have, strict=True)
            if ok
        ]

    def latest(self, path: str, metric: str) -> float | None:
        """The last kept value of ``metric`` at ``path`` (None when there is none)."""
        got = self.points(path, metric)
        return got[-1][1] if got else None

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (the rows in use and the timeline)."""
        rows = len(self._rows)
        per_row = sum(v[0].nbytes for v in self._values.values())
        return rows * per_row + self.steps.nbytes


def _empty(shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, dtype=np.float16)
    out.view(np.uint16)[:] = _MISSING
    return out


class LossBuffer:
    """The loss per step on its own thinned timeline (float32: a curve of one value per step)."""

    def __init__(self, capacity: int = LOSS_CAPACITY) -> None:
        self.capacity = capacity
        self.steps = np.zeros(capacity, dtype=np.int64)
        self.values = np.zeros(capacity, dtype=np.float32)
        self.n = 0
        self.stride = 1
        self.taken = 0

    def add(self, step: int, value: float) -> None:
        index, self.taken = self.taken, self.taken + 1
        if index % self.stride:
            return
        if self.n == self.capacity:
            half = self.capacity // 2
            self.steps[:half] = self.steps[::2].copy()
            self.values[:half] = self.values[::2].copy()
            self.n, self.stride = half, self.stride * 2
            if index % self.stride:
                return
        self.steps[self.n], self.values[self.n] = step, value
        self.n += 1

    def points(self) -> list[tuple[int, float]]:
        return [(int(s), float(v)) for s, v in zip(self.steps[: self.n], self.values[: self.n])]
