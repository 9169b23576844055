"""One step of the lens, measured: ``Recorder`` holds what the hooks (``_watch/hooks.py``) saw
during a step and turns it into samples, flags and the first non-finite module at the step's end.

A step that is not sampled reads nothing: it is counted (and its loss kept, when given). Sampled
steps (every ``every``-th, the first included), and every step with ``check_every`` until the
first NaN, check whether any weight gradient is non-finite (one fused ``_foreach_norm``, one
number read) and keep what a replay needs (the forward's inputs and RNG state, no copies).
Sampled steps also take the activation figures (first call of each module), the gradient norm of
each module's own weights and, around ``optimizer.step()``, the update ratio ||w_after -
w_before|| / ||w_before|| (from a copy of the weights for the step's duration: all of a tensor up
to ``EXACT`` values, else ``SAMPLE`` evenly spaced ones, each standing for its share).
The first step found non-finite is run again armed (``_watch/replay.py``): every module's output
and input gradient checked, to find where the NaN/Inf began (``_watch/finite.py``), unless its
weights were already non-finite as it began (an update at a step not checked spoilt them:
``_spoilt`` says so, naming the steps, and guesses no module). Everything a sampled step measures
stays a 0-d tensor until its end, stacked into one and read with one synchronisation (not one
per module).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

from .acts import BOUNDS, act_stats, bounds, first_float, is_fake
from .buffer import CAPACITY, LossBuffer
from .finite import FiniteTracker, NonFinite, values
from .flags import Flag, Thresholds
from .replay import Capture, replay
from .shards import NOT_REPLAYED, has_dtensors, local
from .store import ActOf, Samples
from .update import Views, Weighing

__all__ = ["BOUNDS", "Recorder"]


class Recorder:
    """The measurements of a watch, step by step (``watch.py`` drives it)."""

    def __init__(
        self,
        every: int,
        thresholds: Thresholds,
        capacity: int = CAPACITY,
        check_every: bool = False,
    ) -> None:
        self.every = every
        # Every step's gradients checked for NaN/Inf (else the sampled steps' alone).
        self.check_every = check_every
        self._checked_ok = 0  # the last step whose gradients were checked and finite
        self.thresholds = thresholds
        # Each sampled step's figures stored and judged (``_watch/store.py``); its history, its
        # flags and each module's last sample are the recorder's too.
        self.samples = Samples(thresholds, capacity)
        self.series = self.samples.series
        self.loss = LossBuffer()
        self.flags = self.samples.flags
        self.finite = FiniteTracker()
        self.nonfinite: NonFinite | None = None
        self.done = 0  # completed steps
        self.latest = self.samples.latest  # exact last sample per module
        self.paths: dict[int, str] = {}
        self.classes: dict[str, str] = {}
        self._weights: list[tuple[nn.Parameter, str]] = []  # trainable, each with its module
        self.capture = Capture()
        # Every module's hooks on or off, with their pre-hooks or not (the watch's,
        # _watch/hooks.py): a replay needs both.
        self.each: Callable[[bool, bool], None] = lambda on, taps: None
        self.closed = False
        self._replaying = False
        # False where running the forward again would issue collectives on this rank alone
        # (FSDP2's all-gathers: the other ranks would never join): the weights' gradients name
        # the module instead (``index`` sets it).
        self.replayable = True
        self._used = True  # a step's figures below were filled since they were last emptied
        self._views = Views()  # how the update ratio reads each weight, kept across steps
        self._sharded = False  # any weight a DTensor (read through its local shard)
        self._start_step()

    # -- the model's modules ---------------------------------------------------------------

    def index(self, model: nn.Module) -> None:
        """(Re)learn the model's modules and trainable weights (after an edit too)."""
        self.model = model
        before = {p: i for i, p in self.paths.items()}
        self.paths = {id(m): p for p, m in model.named_modules()}
        now = {p: i for i, p in self.paths.items()}
        early = self.samples.early
        for path in [p for p in early if before.get(p) != now.get(p)]:
            del early[path]  # a module an edit replaced: its outputs start a new baseline
        self.classes = {p: type(m).__name__ for p, m in model.named_modules()}
        self._sharded = has_dtensors(model)
        self.replayable = not self._sharded
        self._views.clear()
        self._static_order = {p: i for i, (p, _) in enumerate(model.named_modules())}
        seen: set[int] = set()
        self._weights = []
        for path, m in model.named_modules():
            for p in m.parameters(recurse=False):
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    self._weights.append((p, path))

    @property
    def step(self) -> int:
        """The step being computed now."""
        return self.done + 1

    def sampled(self, step: int) -> bool:
        """Whether ``step`` takes the figures (the first, then every ``every``-th)."""
        return (step - 1) % self.every == 0

    def checked(self, step: int) -> bool:
        """Whether ``step``'s gradients are checked for NaN/Inf."""
        return self.check_every or self.sampled(step)

    @property
    def capturing(self) -> bool:
        """Whether this step keeps what a replay needs (its inputs and RNG state: no copies):
        a step whose gradients are checked, until the first NaN (after it there is none to
        find)."""
        return self.checked(self.step) and self.nonfinite is None and self.replayable

    def _start_step(self) -> None:
        self.sampling = self.sampled(self.step)
        self.capture.clear()
        self.capture.enabled = self.capturing
        self._bad_loss = False
        self._new_nonfinite: NonFinite | None = None
        if not (self.sampling or self._used):
            return  # nothing below was touched since it was last emptied: a step costs a counter
        self._used = self.sampling
        # A sampled step's outputs so far: id -> (the tensor, weakly; its version then; the
        # figures taken of it).
        self._outputs: dict[int, tuple[weakref.ref[torch.Tensor], int, list[torch.Tensor]]] = {}
        # path -> (its output's sum, norm, non-zeros[, values at a bound]: 0-d; own; numel)
        self._acts: dict[str, tuple[list[torch.Tensor], bool, int]] = {}
        self.order: dict[str, int] = {}
        # A sampled step's gradient norms: the weights they are of, and the 0-d norms.
        self._grads: tuple[list[tuple[nn.Parameter, str]], list[float]] = ([], [])
        # A sampled step's weight norms and update norms: 0-d, read with the activations at the end.
        self._weighing = Weighing()

    @property
    def quiet(self) -> bool:
        """Whether this step reads nothing: not sampled, not checked, not replayed."""
        return not (self.sampling or self.check_every or self._replaying or self.closed)

    def quiet_end(self) -> bool:
        """End a quiet step that left nothing to store and whose next step is quiet too (True),
        with a counter alone: ``end`` and ``_start_step`` would change nothing else. False:
        nothing done, ``end`` must run."""
        if not self.quiet or self._used or self._bad_loss or self._new_nonfinite is not None:
            return False
        if self.capture.enabled or self.capture.calls or self.sampled(self.done + 2):
            return False
        self.done += 1
        return True

    # -- the hooks' side -------------------------------------------------------------------

    @property
    def armed(self) -> bool:
        """Every module's outputs and input gradients checked: only while a step that turned
        non-finite runs again (``_replay``). Why not on sampled steps too: the views and gradient
        hooks it takes doubled a ResNet-50's backward; the weights' gradient norms, read every
        step, find the step, and its replay finds the module."""
        return self._replaying

    def forward(self, module: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        if self.closed or not (self._replaying or self.sampling) or not torch.is_grad_enabled():
            return  # probes, eval
        path = self.paths.get(id(module))
        if type(output) is torch.Tensor:  # the common case: a plain tensor is fake when on meta
            out = output
            if out.is_meta or not out.is_floating_point() or not out.numel():
                return
        else:
            out = first_float(output)  # type: ignore[assignment]
            if out is None or is_fake(out):
                return
        if path is None:
            return
        order = self.order
        if path not in order:
            order[path] = len(order)
        if self._replaying:
            ins = [
                t
                for t in tree_leaves((args, kwargs))
                if isinstance(t, torch.Tensor) and t.is_floating_point() and not is_fake(t)
            ]
            self.finite.forward(path, out, ins)
            return
        # False for a child's output passed on; an in-place op (ReLU(inplace=True)) makes a new
        # version of its input, its own output.
        # The tensor itself, not its id alone: an output freed earlier in the step (a Linear's,
        # once the ReLU after it ran) leaves its id to a new one, which must not pass for it.
        seen = self._outputs.get(id(out))
        own = seen is None or seen[0]() is not out or seen[1] != out._version
        got = self._acts.get(path)
        if got is None:
            if not own and seen is not None and bounds(module) is None:
                # A child's output passed on (a Sequential's last child's): the child's figures,
                # not a second pass over the same tensor (the bound share is the child's own).
                stats = seen[2][:3]
            else:
                stats = act_stats(module, (local(out) if self._sharded else out).detach())
            got = self._acts[path] = (stats, own, out.numel())
        self._outputs[id(out)] = (weakref.ref(out), out._version, got[0])

    def tap(self, module: nn.Module, args: Any, kwargs: Any) -> tuple[Any, Any] | None:
        """The forward pre-hook: on an armed step, each input that needs a gradient becomes a
        view of its own (top-level arguments only: a cache object must stay the same object)."""
        if self.closed or not self.armed or not torch.is_grad_enabled():
            return None
        path = self.paths.get(id(module))
        if path is None:
            return None

        def one(t: Any) -> Any:
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point():
                return t if is_fake(t) else self.finite.tap(path, t)
            return t

        return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}

    # -- the step's end --------------------------------------------------------------------

    def backward_done(self, optimizer_params: set[int] | None, update_ratio: bool) -> None:
        """After the backward, before the update: gradient checks and norms; a copy of the
        weights for the update ratio when this step is sampled."""
        # A step that is not sampled reads nothing unless every step is checked, and then only
        # until the first NaN (after it there is none to find).
        if not (self.sampling or self.armed or (self.check_every and self.nonfinite is None)):
            return
        have = [
            (p, path) for p, path in self._weights if p.grad is not None and not p.grad.is_sparse
        ]
        bad_weights: list[str] = []
        if have:
            grads: list[torch.Tensor] = (
                [local(p.grad) for p, _ in have]  # type: ignore[arg-type]
                if self._sharded
                else [p.grad for p, _ in have]  # type: ignore[misc]
            )
            # (no no_grad: a gradient needs none, save under create_graph, which this runs after)
            got = list(torch._foreach_norm(grads))
            # One read now: a sampled step's norms (its figures), else their sum alone (each
            # norm read only if it is not finite).
            if self.sampling:
                read = values(got)
                self._grads = (have, read)
                norms = [] if all(map(math.isfinite, read)) else read
            else:
                norms = [] if _finite(got) else values(got)
            if norms:
                bad = (
                    path for (_, path), v in zip(have, norms, strict=True) if not math.isfinite(v)
                )
                bad_weights = list(dict.fromkeys(bad))
        spoilt = self._spoilt() if bad_weights and self.nonfinite is None else None
        nf: NonFinite | None
        if spoilt is not None:
            nf = spoilt
            self.finite.clear()
        elif self.armed:
            nf = self.finite.resolve(self.step, self.classes, bad_weights, self._order())
        elif bad_weights and self.nonfinite is None and self.capture.calls and self.replayable:
            nf = self._replay()
        elif bad_weights and self.nonfinite is None and not self.replayable:
            nf = self.finite.resolve(self.step, self.classes, bad_weights, self._order())
            if nf is not None:
                nf = replace(nf, detail=nf.detail + NOT_REPLAYED)
        else:
            nf = None
            self.finite.clear()
        if nf is not None:
            self._found(nf)
        elif not bad_weights and self.checked(self.step):
            self._checked_ok = self.step
        if self.sampling and self._weights:
            held = optimizer_params if update_ratio else None
            self._weighing.take(self._weights, have, held, self._views)

    def _spoilt(self) -> NonFinite | None:
        """Where this step's weights were already NaN/Inf before its forward: an update made
        at a step not checked spoilt them (None: they are finite, the NaN began in this step).
        The first module, in forward order, holding such a weight is named."""
        if self.check_every or self.step - 1 <= self._checked_ok:
            return None  # every step since the weights were last seen finite was checked
        # Every value of every weight (a sampled step's norms may be of a sample).
        norms = list(torch._foreach_norm([local(p).detach() for p, _ in self._weights]))
        bad = [
            path
            for (_, path), v in zip(self._weights, values(norms), strict=True)
            if not math.isfinite(v)
        ]
        if not bad:
            return None
        order = self._static_order
        path = min(bad, key=lambda p: order.get(p, 1 << 30))
        since, many = self._checked_ok, len(set(bad))
        more = f" (and {many - 1} later modules' weights)" if many > 1 else ""
        what = (
            f"its weights{more} were already NaN/Inf when step {self.step} began: they changed "
            f"at steps {since}-{self.step - 1}, which were not checked, and which module began it "
            "is not known (watch(..., check_every_step=True) checks every step)"
        )
        return NonFinite(self.step, path, "update", self.classes.get(path, ""), what)

    def _order(self) -> dict[str, int]:
        return self.order or self._static_order

    def _replay(self) -> NonFinite | None:
        self._used = True  # the replay's forward order (``order``) is emptied with the rest
        self.finite.clear()
        calls, self.capture.calls = self.capture.calls, []

        def arm(on: bool) -> None:
            self._replaying = on
            self.capture.enabled = False
            self.each(on or self.sampling, on)

        names = replay(self.model, calls, arm)
        bad = list(dict.fromkeys(n.rpartition(".")[0] for n in names))
        got = self.finite.resolve(self.step, self.classes, bad, self._order())
        self.order = {}
        return got

    def updated(self) -> None:
        """After ``optimizer.step()``: the norm of each weight's update (read at the step's end,
        where it becomes the update ratio of each module's own weights)."""
        self._weighing.updated()

    def loss_value(self, step: int, value: float) -> None:
        self.loss.add(step, value)
        if not math.isfinite(value):
            if step <= self.done:
                if self.nonfinite is None:
                    self._found(_loss_culprit(step, self.checked(step)))
            else:
                self._bad_loss = True

    def end(self) -> list[Flag]:
        """Close the step: samples stored, flags raised; returns the new flags."""
        step = self.step
        if self._bad_loss and self._new_nonfinite is None and self.nonfinite is None:
            self._found(_loss_culprit(step, self.checked(step)))
        new: list[Flag] = []
        if self.sampling:
            new = self._store(step)
        nf = self._new_nonfinite
        if nf is not None and nf.path is not None:
            new += self.flags.update(step, nf.path, {"nonfinite"}, sampled=False)
        if self._used or self.armed:
            self.finite.clear()
        self.done += 1
        self._start_step()
        return new

    def _found(self, nf: NonFinite) -> None:
        self._new_nonfinite = self._new_nonfinite or nf
        if self.nonfinite is None:
            self.nonfinite = nf

    def _read(
        self,
    ) -> tuple[tuple[dict[str, float], dict[str, float], dict[str, float]], ActOf]:
        """The sampled step's 0-d figures, read with one synchronisation: each module's gradient
        norm, weight norm and update ratio, and its output's figures."""
        acts = list(self._acts.items())
        (have, grads), self._grads = self._grads, ([], [])
        weighing, self._weighing = self._weighing, Weighing()
        weights = weighing.tensors()
        got = values([*weights, *(t for _, (ts, _, _) in acts for t in ts)])
        sq: dict[str, float] = {}
        for (_, path), v in zip(have, grads, strict=True):
            sq[path] = sq.get(path, 0.0) + v * v
        grad_norms = {p: math.sqrt(v) for p, v in sq.items()}
        i = len(weights)
        param_norms, updates = weighing.figures(got[:i])
        act_of: ActOf = {}
        for path, (ts, own, n) in acts:
            raw = got[i : i + len(ts)]
            i += len(ts)
            # sum, norm, non-zeros[, at a bound] -> mean, sqrt(E[x^2]), share non-zero[, share]
            act_of[path] = ([raw[0] / n, raw[1] / math.sqrt(n), *(v / n for v in raw[2:])], own)
        return (grad_norms, param_norms, updates), act_of

    def _store(self, step: int) -> list[Flag]:
        weights, act_of = self._read()
        return self.samples.add(step, self.order, weights, act_of)


def _finite(norms: list[torch.Tensor]) -> bool:
    """Whether every norm is finite, from one number read: their sum (exact: a sum of finite
    norms that overflows is read again one by one)."""
    try:
        total = torch.stack(norms).sum().item()
    except RuntimeError:  # several dtypes or devices
        total = math.inf
    return math.isfinite(total) or all(map(math.isfinite, values(norms)))


def _loss_culprit(step: int, checked: bool) -> NonFinite:
    if checked:
        what = (
            "the loss is NaN/Inf while every module's output was finite: the loss function made it"
        )
    else:
        what = (
            "the loss is NaN/Inf at a step whose modules were not checked: where it began is not "
            "known (watch(..., check_every_step=True) checks every step)"
        )
    return NonFinite(step, None, "loss", "", what)
