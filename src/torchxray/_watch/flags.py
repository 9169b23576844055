"""When a sampled module is flagged, and the flags' records: ``Thresholds`` (the rules, with the
figures they compare against) and ``FlagBook`` (edge-triggered: a flag is recorded when its
condition starts to hold at a module and recorded again only after it stopped holding).

    >>> book = FlagBook()
    >>> book.update(10, "relu", {"dead"}), book.update(20, "relu", {"dead"}), book.active
    ([Flag(step=10, path='relu', kind='dead')], [], {'relu': ('dead',)})
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["KINDS", "MAX_FLAGS", "Flag", "FlagBook", "Thresholds", "kinds_of"]

KINDS = ("vanishing", "exploding", "dead", "saturated", "nonfinite")
MAX_FLAGS = 10_000  # records kept (the first ones); `FlagBook.dropped` counts the rest


@dataclass(frozen=True, slots=True)
class Flag:
    step: int
    path: str
    kind: str


@dataclass(frozen=True)
class Thresholds:
    """The rules a sample is flagged by (pass ``thresholds=`` to ``tx.watch`` to change them).

    - vanishing: the gradient norm of the module's own weights is below ``vanishing`` times
      their norm (a layer that has stopped learning; exactly 0 behind dead ReLUs);
    - exploding: a step changes the weights by more than ``exploding_update`` of their norm (the
      update ratio; ~1e-3 is healthy, 0.1 means a learning rate far too high), or without an
      optimizer the gradient norm passes ``exploding_grad`` times the weights' norm;
    - dead: at least ``dead`` of the module's outputs are exactly 0;
    - saturated: at least ``saturated`` of a bounded activation's outputs (Tanh, Sigmoid,
      Hardtanh, Softsign, Hardsigmoid) are within 1% of the range from a bound;
    - nonfinite: a sampled figure is NaN or Inf, or the module is where a step's NaN/Inf began.
    """

    vanishing: float = 1e-6
    exploding_update: float = 0.1
    exploding_grad: float = 10.0
    dead: float = 0.95
    saturated: float = 0.95


def kinds_of(sample: dict[str, float], t: Thresholds) -> set[str]:
    """The flags one module's sample raises; ``sample`` holds what was measured: grad_norm,
    param_norm, update_ratio, act_zeros, saturated (the fraction at the bounds), and
    ``own_output`` (1.0 when the output was not a child's, which the activation flags need)."""
    out: set[str] = set()
    if any(not math.isfinite(v) for v in sample.values()):
        return {"nonfinite"}
    g, p = sample.get("grad_norm"), sample.get("param_norm")
    if g is not None and p:
        if g < t.vanishing * p:
            out.add("vanishing")
        if "update_ratio" not in sample and g > t.exploding_grad * p:
            out.add("exploding")
    u = sample.get("update_ratio")
    if u is not None and u > t.exploding_update:
        out.add("exploding")
    if sample.get("own_output"):
        if sample.get("act_zeros", 0.0) >= t.dead:
            out.add("dead")
        if sample.get("saturated", 0.0) >= t.saturated:
            out.add("saturated")
    return out


@dataclass
class FlagBook:
    """The flag records and which flags hold now, per module."""

    records: list[Flag] = field(default_factory=list)
    dropped: int = 0
    _active: dict[str, set[str]] = field(default_factory=dict)

    def update(self, step: int, path: str, kinds: set[str], sampled: bool = True) -> list[Flag]:
        """Record the flags that start to hold at ``path``; with ``sampled`` False (a figure
        this step did not measure) flags only start, never stop."""
        before = self._active.get(path, set())
        new = [Flag(step, path, k) for k in KINDS if k in kinds and k not in before]
        now = before | kinds if not sampled else set(kinds)
        if now:
            self._active[path] = now
        else:
            self._active.pop(path, None)
        room = MAX_FLAGS - len(self.records)
        self.records.extend(new[: max(room, 0)])
        self.dropped += max(len(new) - max(room, 0), 0)
        return new

    def forget(self, path: str) -> None:
        self._active.pop(path, None)

    @property
    def active(self) -> dict[str, tuple[str, ...]]:
        return {p: tuple(k for k in KINDS if k in ks) for p, ks in self._active.items()}
