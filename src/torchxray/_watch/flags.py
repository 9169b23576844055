"""When a sampled module is flagged, and the flags' records: ``Thresholds`` (the rules, with the
figures they compare against) and ``FlagBook`` (one record per module and kind, with hysteresis).

A figure near its threshold flickers across it from one sample to the next; recorded each time it
crossed, two planted problems gave 32 records in 518 steps, and the real one scrolled away. So a
flag that holds keeps holding until its condition has been false for ``clear_after`` samples in a
row, judged against a threshold moved ``margin`` times to the healthy side; and a flag raised
again at a module adds to that module's record for the kind (``count``, ``last``) instead of
making a new one: "vanishing at fc1, 3 times since step 41".

    >>> book = FlagBook(clear_after=2)
    >>> book.update(10, "relu", {"dead"}), book.update(20, "relu", set()), book.active
    ([Flag(step=10, path='relu', kind='dead', count=1, last=10)], [], {'relu': ('dead',)})
    >>> _ = book.update(30, "relu", set()); book.update(40, "relu", {"dead"})
    [Flag(step=10, path='relu', kind='dead', count=2, last=40)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

__all__ = ["KINDS", "MAX_FLAGS", "Flag", "FlagBook", "Thresholds", "kinds_of"]

KINDS = ("vanishing", "exploding", "magnitude", "dead", "saturated", "nonfinite")
MAX_FLAGS = 10_000  # records kept (the first ones); `FlagBook.dropped` counts the rest
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Flag:
    """A kind of problem at a module: first raised at ``step``, raised ``count`` times in all
    (each time after it had cleared), the last time at ``last``."""

    step: int
    path: str
    kind: str
    count: int = 1
    last: int = 0

    def __post_init__(self) -> None:
        if not self.last:
            object.__setattr__(self, "last", self.step)


@dataclass(frozen=True)
class Thresholds:
    """The rules a sample is flagged by (pass ``thresholds=`` to ``tx.watch`` to change them).

    - vanishing: the gradient norm of the module's own weights is below ``vanishing`` times
      their norm (a layer that has stopped learning; exactly 0 behind dead ReLUs);
    - exploding: a step changes the weights by more than ``exploding_update`` of their norm (the
      update ratio; ~1e-3 is healthy, 0.1 means a learning rate far too high), or without an
      optimizer the gradient norm passes ``exploding_grad`` times the weights' norm;
    - magnitude: the module's output (root mean square) is ``magnitude`` times what it was over
      its first samples, beyond what the modules that ran before it in the step grew (so the
      layer where activations blow up is flagged, not every layer after it);
    - dead: at least ``dead`` of the module's outputs are exactly 0;
    - saturated: at least ``saturated`` of a bounded activation's outputs (Tanh, Sigmoid,
      Hardtanh, Softsign, Hardsigmoid) are within 1% of the range from a bound;
    - nonfinite: a sampled figure is NaN or Inf, or the module is where a step's NaN/Inf began.

    A flag that holds clears only after ``clear_after`` samples in a row without it, each judged
    against its threshold moved ``margin`` times to the healthy side (a ratio multiplied or
    divided by it; for a fraction, its distance to 1 multiplied: dead holds down to 0.90).
    """

    vanishing: float = 1e-6
    exploding_update: float = 0.1
    exploding_grad: float = 10.0
    magnitude: float = 200.0
    dead: float = 0.95
    saturated: float = 0.95
    margin: float = 2.0
    clear_after: int = 3


def kinds_of(
    sample: dict[str, float],
    t: Thresholds,
    held: frozenset[str] | set[str] = _NONE,
    own: bool | None = None,
) -> set[str]:
    """The flags one module's sample raises; ``sample`` holds what was measured: grad_norm,
    param_norm, update_ratio, act_zeros, saturated (the fraction at the bounds), act_growth (the
    output's RMS over its first samples') and act_growth_in (the largest growth among the
    modules that ran before it), and ``own_output`` (1.0 when the output was not a child's, which
    the activation flags need; ``own`` says it instead when given). A kind in ``held`` is judged
    with the margin (hysteresis). Written as one pass without helpers: a sampled step judges
    every module (bench/README.md, issue 55)."""
    out: set[str] = set()
    for v in sample.values():
        if not math.isfinite(v):
            return {"nonfinite"}
    margin = t.margin
    g, p = sample.get("grad_norm"), sample.get("param_norm")
    u = sample.get("update_ratio")
    if g is not None and p:
        if g < t.vanishing * (margin if "vanishing" in held else 1.0) * p:
            out.add("vanishing")
        if u is None and g > t.exploding_grad / (margin if "exploding" in held else 1.0) * p:
            out.add("exploding")
    if u is not None and u > t.exploding_update / (margin if "exploding" in held else 1.0):
        out.add("exploding")
    if own if own is not None else sample.get("own_output"):
        dead = 1.0 - (1.0 - t.dead) * (margin if "dead" in held else 1.0)
        if sample.get("act_zeros", 0.0) >= dead:
            out.add("dead")
        saturated = 1.0 - (1.0 - t.saturated) * (margin if "saturated" in held else 1.0)
        if sample.get("saturated", 0.0) >= saturated:
            out.add("saturated")
        growth = sample.get("act_growth")
        if growth is not None:
            mine = growth / max(sample.get("act_growth_in", 1.0), 1.0)
            if mine >= t.magnitude / (margin if "magnitude" in held else 1.0):
                out.add("magnitude")
    return out


@dataclass
class FlagBook:
    """The flag records (one per module and kind, in the order first raised) and which flags
    hold now, per module."""

    clear_after: int = 3  # samples in a row without a flag before it stops holding
    records: list[Flag] = field(default_factory=list)
    dropped: int = 0
    _active: dict[str, set[str]] = field(default_factory=dict)
    _quiet: dict[tuple[str, str], int] = field(default_factory=dict)  # held, not seen: samples
    _at: dict[tuple[str, str], int] = field(default_factory=dict)  # (path, kind) -> record index

    def holding(self, path: str) -> set[str] | frozenset[str]:
        """The flags that hold at ``path`` now: the book's own set (not a copy), or an empty
        one; read it before ``update``, which changes it."""
        return self._active.get(path) or _NONE

    def update(self, step: int, path: str, kinds: set[str], sampled: bool = True) -> list[Flag]:
        """Note a sample's flags at ``path``; returns the records of those that start to hold
        (new, or counted again). With ``sampled`` False (a figure this step did not measure)
        flags only start, never stop."""
        now = self._active.setdefault(path, set())
        raised: list[Flag] = []
        for k in KINDS:
            key = (path, k)
            if k in kinds:
                self._quiet.pop(key, None)
                if k not in now:
                    now.add(k)
                    got = self._raise(step, key)
                    if got is not None:
                        raised.append(got)
            elif sampled and k in now:
                quiet = self._quiet.get(key, 0) + 1
                if quiet >= self.clear_after:
                    now.discard(k)
                    self._quiet.pop(key, None)
                else:
                    self._quiet[key] = quiet
        if not now:
            del self._active[path]
        return raised

    def _raise(self, step: int, key: tuple[str, str]) -> Flag | None:
        i = self._at.get(key)
        if i is not None:
            old = self.records[i]
            self.records[i] = flag = replace(old, count=old.count + 1, last=step)
            return flag
        if len(self.records) >= MAX_FLAGS:
            self.dropped += 1
            return None
        self._at[key] = len(self.records)
        self.records.append(Flag(step, key[0], key[1]))
        return self.records[-1]

    def forget(self, path: str) -> None:
        self._active.pop(path, None)
        for key in [k for k in self._quiet if k[0] == path]:
            del self._quiet[key]

    @property
    def active(self) -> dict[str, tuple[str, ...]]:
        return {p: tuple(k for k in KINDS if k in ks) for p, ks in self._active.items()}
