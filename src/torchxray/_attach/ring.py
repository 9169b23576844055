"""A rank's recent figures, as the job's handler serves them: ``Ring``, filled on the training
thread at the watch's sampled steps (and when a step first meets NaN/Inf), read by the worker
server's thread at any time.

What the training thread does here is copy: each module's last sample (``Recorder.latest``, the
exact values) into one float32 matrix (``_attach/wire.py``), the loss points logged since, and the
flags and first non-finite module as they stand. Nothing is computed for the watcher beyond what
the watch measures already, and nothing is sent: the handler reads what was copied.

Why copies swapped in whole: the server's thread reads while the loop writes. Each sample is a new
object appended to a ``deque`` (one operation under the GIL), and the state the handler reads
(``Snapshot``) is replaced by one assignment; neither thread waits for the other (no lock the
training thread could queue behind).

    >>> from torchxray._watch.record import Recorder
    >>> from torchxray._watch.flags import Thresholds
    >>> rec = Recorder(10, Thresholds())
    >>> rec.latest = {"fc": {"grad_norm": 0.5, "param_norm": 2.0}}; rec.done = 1
    >>> ring = Ring(capacity=4)
    >>> ring.sample(rec)
    >>> [(s.step, s.rows) for s in ring.since(0)], ring.paths
    ([(1, 1)], ['fc'])
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .wire import FIGURES, empty, encode

if TYPE_CHECKING:
    from .._watch.finite import NonFinite
    from .._watch.flags import Flag
    from .._watch.record import Recorder

__all__ = ["LOSS_RING", "RING", "Ring", "Sample", "Snapshot"]

RING = 64  # sampled steps kept per rank: 640 steps at every=10, ~1.5 MB for 1,000 modules
LOSS_RING = 2048  # loss points kept per rank
_COLUMN = {f: i for i, f in enumerate(FIGURES)}


@dataclass
class Sample:
    """One sampled step: its figures, one row per module known then (``Ring.paths[:rows]``)."""

    step: int
    rows: int
    matrix: np.ndarray
    text: str | None = None  # its base64, made once by the first request that sends it

    def encoded(self) -> str:
        if self.text is None:
            self.text = encode(self.matrix)
        return self.text


@dataclass(frozen=True)
class Snapshot:
    """What the handler sends besides the samples, as of the last copy."""

    step: int  # the last step copied
    flags: tuple[Flag, ...]
    flags_rev: int  # bumped whenever the records change
    active: dict[str, tuple[str, ...]]
    nonfinite: NonFinite | None


class Ring:
    """The recent samples, the loss and the flags of one rank."""

    def __init__(self, capacity: int = RING) -> None:
        self.samples: deque[Sample] = deque(maxlen=capacity)
        self.loss: deque[tuple[int, float]] = deque(maxlen=LOSS_RING)
        self.paths: list[str] = []  # only grows: a row number means one module for good
        self._row: dict[str, int] = {}
        self._seen: dict[str, object] = {}  # each module's last sample dict copied (by identity)
        self._loss_to = 0  # the last loss step copied
        self.snapshot = Snapshot(0, (), 0, {}, None)

    def sample(self, rec: Recorder) -> None:
        """Copy what ``rec`` holds now (on the training thread, after a step's end)."""
        fresh = [(p, v) for p, v in rec.latest.items() if self._seen.get(p) is not v]
        for path, _ in fresh:
            if path not in self._row:
                self._row[path] = len(self.paths)
                self.paths.append(path)
        if fresh:
            matrix = empty(len(self.paths))
            for path, figures in fresh:
                self._seen[path] = figures
                row = self._row[path]
                for name, value in figures.items():
                    col = _COLUMN.get(name)
                    if col is not None:
                        matrix[row, col] = value
            self.samples.append(Sample(rec.done, len(self.paths), matrix))
        self._copy_loss(rec)
        old = self.snapshot
        flags = tuple(rec.flags.records)
        rev = old.flags_rev if flags == old.flags else old.flags_rev + 1
        self.snapshot = Snapshot(rec.done, flags, rev, rec.flags.active, rec.nonfinite)

    def _copy_loss(self, rec: Recorder) -> None:
        buf = rec.loss
        n = buf.n
        if not n or int(buf.steps[n - 1]) <= self._loss_to:
            return
        start = int(np.searchsorted(buf.steps[:n], self._loss_to, side="right"))
        for s, v in zip(buf.steps[start:n].tolist(), buf.values[start:n].tolist(), strict=True):
            self.loss.append((int(s), float(v)))
        self._loss_to = int(buf.steps[n - 1])

    def since(self, step: int) -> list[Sample]:
        """The samples after ``step`` that the ring still holds, oldest first."""
        return [s for s in list(self.samples) if s.step > step]

    def missed(self, step: int) -> bool:
        """Whether samples after ``step`` fell out of the ring before being asked for."""
        held = list(self.samples)
        return bool(held) and step > 0 and held[0].step > step and len(held) == self.samples.maxlen

    def loss_since(self, step: int) -> list[tuple[int, Any]]:
        # JSON has no NaN or Inf: sent as text, read back by the notebook (`_attach/history.py`).
        return [(s, v if math.isfinite(v) else str(v)) for s, v in list(self.loss) if s > step]
