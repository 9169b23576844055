"""Where a step's first NaN/Inf began: ``FiniteTracker`` collects, on an armed step, one 0-d sum
per module output (forward) and per gradient of each module's inputs and outputs (backward, in
the order autograd produced them), and ``resolve`` reads them all with one synchronisation.

The forward is localised as the probe localises it: the first module (in the order calls
finished, innermost first) whose output holds NaN/Inf while its inputs did not. The backward the
same way, in autograd's order: each module gets its inputs as views of their own (``tap``), so
the gradient of a view is that module's input gradient alone, even where two modules read one
tensor (a residual block's input); the first non-finite gradient is either a module's input
gradient (that module's backward made it) or a module's output gradient with no module after it
(the code of its parent made it, or the loss when it is the model's output). A module whose own
weights' gradients are non-finite while every activation gradient is finite (a first layer, or a
weight gradient alone) is found from the weights' gradients. Why sums: a sum is NaN or Inf
exactly when a value is (accumulated in float32, so that float16's range does not overflow it),
and it is one pass over the tensor with no boolean copy.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["FiniteTracker", "NonFinite", "fast_sum", "values"]

Key = tuple[int, int]  # (serial, _version) of a tensor: one value of it


@dataclass(frozen=True, slots=True)
class NonFinite:
    """The first step whose forward or backward produced NaN/Inf, and where.

    ``path`` is the module (None: outside every module, e.g. the loss or the inputs), ``phase``
    "forward", "backward" or "loss", ``detail`` a sentence saying what was seen. Phase "update":
    the weights were already NaN/Inf as ``step`` began, changed at steps that were not checked
    (``watch(check_every_step=False)``); ``path`` is then the first module holding such a weight,
    and the detail names the steps. Unpacks as ``step, path = w.nonfinite``."""

    step: int
    path: str | None
    phase: str
    cls: str
    detail: str

    def __iter__(self) -> Any:
        return iter((self.step, self.path))


def values(tensors: list[torch.Tensor]) -> list[float]:
    """0-d tensors read as floats with one synchronisation (stacked where they live)."""
    if not tensors:
        return []
    f32 = torch.float32
    try:
        return torch.stack([t if t.dtype is f32 else t.float() for t in tensors]).tolist()
    except RuntimeError:  # on several devices
        return torch.stack([t.float().cpu() for t in tensors]).tolist()


def fast_sum(t: torch.Tensor) -> torch.Tensor:
    # float32 and float64 summed as they are: with a dtype argument the CPU kernel takes ~4x as
    # long; float16 and bfloat16 in float32, so that their range does not overflow the sum.
    t = t.detach()
    return t.sum() if t.dtype in (torch.float32, torch.float64) else t.sum(dtype=torch.float32)


_sum = fast_sum


class _Hook:
    __slots__ = ("kind", "path", "serial", "tracker")

    def __init__(self, tracker: FiniteTracker, kind: str, path: str, serial: int) -> None:
        self.tracker, self.kind, self.path, self.serial = tracker, kind, path, serial

    def __call__(self, grad: torch.Tensor) -> None:
        if self.tracker.active:
            self.tracker.events.append((self.kind, self.path, self.serial, _sum(grad)))


class _NodeHook:
    """An input gradient taken at the producer's autograd node (``forward``: in place)."""

    __slots__ = ("hook", "nr")

    def __init__(self, tracker: FiniteTracker, path: str, serial: int, nr: int) -> None:
        self.hook, self.nr = _Hook(tracker, "inplace", path, serial), nr

    def __call__(self, grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
        g = grad_outputs[self.nr] if self.nr < len(grad_outputs) else None
        if g is not None:
            self.hook(g)


def _within(inner: str, outer: str) -> bool:
    return outer == "" or inner == outer or inner.startswith(outer + ".")


class FiniteTracker:
    """One armed step's sums; cleared by ``resolve``."""

    def __init__(self) -> None:
        self.active = True
        self.clear()

    def clear(self) -> None:
        self._live: dict[int, tuple[weakref.ref[torch.Tensor], int]] = {}
        self._next = 0
        self._sums: dict[Key, torch.Tensor] = {}
        self._alias: dict[int, int] = {}  # a tap's serial -> the serial of the tensor it views
        self._calls: list[tuple[str, Key, list[Key]]] = []
        self._root_out: int | None = None
        self._outer: dict[int, str] = {}  # an output's serial -> the outermost module returning it
        # (module, view, key of the tensor viewed, its autograd node and output number)
        self._taps: list[tuple[str, torch.Tensor, Key, Any, int]] = []
        # (in|out, module, tensor serial, gradient sum), in the order autograd made them
        self.events: list[tuple[str, str, int, torch.Tensor]] = []

    def _serial(self, t: torch.Tensor) -> int:
        """A number for ``t`` for this step. Not ``id(t)``: a tensor freed during the forward (a
        Linear's output once the next module has run) gives its id to the next one made."""
        got = self._live.get(id(t))
        if got is not None and got[0]() is t:
            return got[1]
        n = self._next = self._next + 1
        self._live[id(t)] = (weakref.ref(t), n)
        return n

    def _key(self, t: torch.Tensor) -> Key:
        s = self._serial(t)
        return (self._alias.get(s, s), t._version)

    def tap(self, path: str, t: torch.Tensor) -> torch.Tensor:
        """``t`` as ``path`` receives it: a view whose gradient is that module's alone."""
        base = self._key(t)
        v = t.view_as(t)
        serial = self._serial(v)
        self._alias[serial] = base[0]
        v.register_hook(_Hook(self, "in", path, serial))
        self._taps.append((path, v, base, t.grad_fn, t.output_nr))
        return v

    def forward(self, path: str, out: torch.Tensor, inputs: list[torch.Tensor]) -> bool:
        """Record a call; False when ``out`` is a child's output passed on."""
        mine = [tap for tap in self._taps if tap[0] == path]
        if mine:
            self._taps = [tap for tap in self._taps if tap[0] != path]
        tapped: dict[int, Key] = {}
        for _, v, base, node, nr in mine:
            tapped[id(v)] = base
            if v._version != base[1] and node is not None:
                # Changed in place (ReLU(inplace=True)): autograd goes from this module's
                # backward to the input's producer past the view's hook; a hook on the
                # producer's node takes the gradient there instead.
                node.register_prehook(_NodeHook(self, path, base[0], nr))
        keys = []
        for t in inputs:
            k = tapped.get(id(t)) or self._key(t)
            if k not in self._sums:
                self._sums[k] = _sum(t)
            keys.append(k)
        k = self._key(out)
        if path == "":
            self._root_out = k[0]
        self._calls.append((path, k, keys))
        outer = self._outer.get(k[0])
        if outer is None or _within(outer, path):
            self._outer[k[0]] = path
        if k in self._sums:  # a container returns its last child's tensor: summed once
            return False
        self._sums[k] = _sum(out)
        if out.requires_grad:
            out.register_hook(_Hook(self, "out", path, k[0]))
        return True

    def resolve(
        self, step: int, classes: dict[str, str], bad_weights: list[str], order: dict[str, int]
    ) -> NonFinite | None:
        """Where this step's NaN/Inf began (None: it had none); ``bad_weights`` are the modules
        whose own weights' gradients are non-finite, ``order`` the forward order of modules."""
        try:
            return self._resolve(step, classes, bad_weights, order)
        finally:
            self.clear()

    def _resolve(
        self, step: int, classes: dict[str, str], bad_weights: list[str], order: dict[str, int]
    ) -> NonFinite | None:
        finite: dict[Key, bool] = {}
        if self._sums:
            ok = [math.isfinite(v) for v in values(list(self._sums.values()))]
            finite = dict(zip(self._sums, ok, strict=True))
        for path, out, ins in self._calls:
            if not finite.get(out, True) and all(finite.get(k, True) for k in ins):
                what = "NaN/Inf in its output while its inputs were finite"
                return NonFinite(step, path, "forward", classes.get(path, ""), what)
        if not all(finite.values()):
            return NonFinite(step, None, "forward", "", "the model's inputs hold NaN/Inf")
        got = self._backward(step, classes)
        if got is None and bad_weights:
            path = max(bad_weights, key=lambda p: order.get(p, -1))
            what = "NaN/Inf in the gradients of its own weights"
            return NonFinite(step, path, "backward", classes.get(path, ""), what)
        return got

    def _backward(self, step: int, classes: dict[str, str]) -> NonFinite | None:
        if not self.events:
            return None
        ok = [math.isfinite(v) for v in values([s for _, _, _, s in self.events])]
        first = next((i for i, v in enumerate(ok) if not v), None)
        if first is None:
            return None
        kind, path, serial, _ = self.events[first]
        if kind == "out":
            # The producer's output gradient and the input gradient of a module that changed
            # that output in place arrive at one autograd node, the producer's hook first.
            later = (
                p
                for k, p, s, _ in self.events[first + 1 :]
                if k == "inplace" and s == serial and p != path
            )
            inplace = next(later, None)
            if inplace is not None:
                kind, path = "in", inplace
        if kind in ("in", "inplace"):
            what = "its backward turned finite output gradients into NaN/Inf input gradients"
            return NonFinite(step, path, "backward", classes.get(path, ""), what)
        path = self._outer.get(serial, path)
        if serial == self._root_out or path == "":
            what = (
                "the gradient reaching the model's output is NaN/Inf: the loss's backward made it"
            )
            return NonFinite(step, None, "loss", "", what)
        parent = path.rpartition(".")[0]
        what = f"its own code (not a child module) made {path}'s output gradient NaN/Inf"
        return NonFinite(step, parent, "backward", classes.get(parent, ""), what)
