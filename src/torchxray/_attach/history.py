"""What the notebook keeps of one rank: ``RankHistory``, merged from the rank's answers
(``take``), and read as the watch's own figures are: ``series(path, figure)``, ``latest(figure)``.

Bounded like the watch's history (``_watch/buffer.py``): at most ``CAPACITY`` samples per rank;
when full, every other older sample is dropped, so the history spans the whole time attached.
Values are the float32 the rank sent (exact to ~1e-7), each module's last value kept apart from
the thinning.

    >>> import numpy as np
    >>> from torchxray._attach.wire import empty, encode
    >>> h = RankHistory(0)
    >>> m = empty(1); m[0, 0] = 2.0
    >>> h.take({"done": 1, "every": 1, "closed": False, "npaths": 1, "paths": ["fc"],
    ...         "sharded": [], "samples": [[1, 1, encode(m)]], "loss": [[1, 0.5]],
    ...         "flags_rev": 0, "flags": [], "active": {}, "nonfinite": None, "missed": False})
    >>> h.series("fc", "grad_norm"), h.request()["since"]
    ([(1, 2.0)], 1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._watch.finite import NonFinite
from .._watch.flags import Flag
from .wire import FIGURES, MISSING, decode, empty

__all__ = ["CAPACITY", "RankHistory"]

CAPACITY = 128  # samples kept per rank
LOSS_CAPACITY = 4096
_COL = {f: i for i, f in enumerate(FIGURES)}


def _number(v: Any) -> float:
    return float(v)  # "nan", "inf" and "-inf" (sent as text: JSON has none) read back too


class RankHistory:
    """One rank as the notebook knows it."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.paths: list[str] = []
        self._row: dict[str, int] = {}
        self.sharded: set[str] = set()
        self.samples: list[tuple[int, np.ndarray]] = []
        self.last = empty(0)  # each module's last value of each figure
        self.last_step = np.zeros(0, dtype=np.int64)
        self.loss: list[tuple[int, float]] = []
        self.flags: list[Flag] = []
        self.flags_rev = -1
        self.active: dict[str, tuple[str, ...]] = {}
        self.nonfinite: NonFinite | None = None
        self.done = 0
        self.every = 0
        self.closed = False
        self.missed = 0  # polls that found samples gone from the rank's ring (polled too slowly)
        self.seen = 0  # answers taken
        self.state = "live"  # live | slow | gone | closed
        self.final = False  # `done` is the rank's last step (its watch closed), not the last seen

    def request(self) -> dict[str, Any]:
        return {
            "since": self.samples[-1][0] if self.samples else 0,
            "loss_since": self.loss[-1][0] if self.loss else 0,
            "npaths": len(self.paths),
            "flags_rev": self.flags_rev,
        }

    def take(self, reply: dict[str, Any]) -> None:
        """Merge one answer of the rank."""
        self.seen += 1
        self.done = int(reply["done"])
        self.every = int(reply["every"])
        self.closed = bool(reply["closed"])
        self.final = self.final or self.closed
        self.state = "closed" if self.closed else "live"
        start = len(self.paths)
        for p in reply["paths"]:
            self._row[p] = len(self.paths)
            self.paths.append(p)
        self.sharded |= {self.paths[i] for i in reply["sharded"]}
        if len(self.paths) > start:
            grown = empty(len(self.paths))
            grown[:start] = self.last
            self.last = grown
            self.last_step = np.concatenate(
                [self.last_step, np.zeros(len(self.paths) - start, dtype=np.int64)]
            )
        if reply.get("missed"):
            self.missed += 1
        for step, rows, text in reply["samples"]:
            matrix = decode(text, rows)
            have = matrix.view(np.uint32) != MISSING
            self.last[:rows][have] = matrix[have]
            self.last_step[:rows][have.any(axis=1)] = step
            self.samples.append((int(step), matrix))
        if len(self.samples) > CAPACITY:
            self.samples = self.samples[::-2][::-1]  # the newest kept, every other one before
        self.loss += [(int(s), _number(v)) for s, v in reply["loss"]]
        if len(self.loss) > LOSS_CAPACITY:
            self.loss = self.loss[::-2][::-1]
        if reply["flags"] is not None:
            self.flags = [Flag(*f) for f in reply["flags"]]
            self.flags_rev = int(reply["flags_rev"])
        self.active = {p: tuple(k) for p, k in reply["active"].items()}
        nf = reply["nonfinite"]
        self.nonfinite = None if nf is None else NonFinite(**nf)

    # -- reading ------------------------------------------------------------------------------

    def series(self, path: str, figure: str) -> list[tuple[int, float]]:
        row, col = self._row.get(path), _COL[figure]
        if row is None:
            return []
        out = []
        for step, m in self.samples:
            if row < m.shape[0] and m[row, col].view(np.uint32) != MISSING:
                out.append((step, float(m[row, col])))
        return out

    def latest(self, figure: str) -> dict[str, float]:
        col = _COL[figure]
        column = self.last[:, col]
        have = column.view(np.uint32) != MISSING
        return {self.paths[i]: float(column[i]) for i in np.flatnonzero(have)}

    def value(self, path: str, figure: str) -> float | None:
        row = self._row.get(path)
        if row is None:
            return None
        v = self.last[row, _COL[figure]]
        return None if v.view(np.uint32) == MISSING else float(v)

    def bad(self) -> float:
        """How unwell this rank looks, for the "worst rank": a first NaN, then flags held."""
        score = float(len(self.active))
        if self.nonfinite is not None:
            score += 1e6 - self.nonfinite.step  # the earlier, the worse
        return score if math.isfinite(score) else 0.0
