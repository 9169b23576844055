"""One fake step of a model: a forward (and, when training, a backward) on fake copies of its
parameters, buffers and inputs, recording what autograd saves for backward, per module, and the
live total over time. Nothing is allocated and the model is never changed: for a training step
its tensors are swapped for fakes by `torch.func.functional_call` for the call only (a forward
without autograd gets each weight's fake as an op first meets it: `_memory.weights.LazyWeights`,
with parameters and buffers the forward replaced put back), train/eval flags and attributes a
forward cached on a module are put back, and the global hooks are removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.utils import _pytree as pytree

from .. import _gc
from .._fake.mode import quiet_fake_logs
from .._fake.state import set_training, snapshot_state, undo_fake_state
from .._fake.values import data_dependent_op
from .._trace import Trace
from .live import LiveBytes, storage_key
from .memo import StepMemo
from .weights import LazyWeights

__all__ = ["StepTrace", "trace_step"]


@dataclass
class StepTrace:
    """What one fake step measured: bytes saved for backward per module (charged to the
    innermost module whose forward was running when autograd saved them, each storage once),
    the highest live total within each module's forward, and over the whole step."""

    saved: dict[str, int] = field(default_factory=dict)
    peaks: dict[str, int] = field(default_factory=dict)
    peak: int = 0
    error: str | None = None
    # The op a fake step stopped at because its result depends on values (`_fake.values`).
    data_dependent: str | None = None
    device: str = "cpu"  # where the step ran (an offloaded weight's execution device)
    memoised: list[str] = field(default_factory=list)  # blocks replayed (`_memory.memo`)
    where: str = ""  # the module a failed step was in
    writes: list[Any] = field(default_factory=list)  # what the forward wrote (`_trace.Write`)
    # After a training step's backward, the real weights (by id) whose fake stand-in got a
    # gradient: a weight whose only path to the loss goes through a rounding or an integer cast
    # (or a quantized tensor's integer data) gets none, as in a real step. None: not a training
    # step, or it failed before its backward.
    graded: set[int] | None = None


class _Stack:
    """The module calls in progress, from global forward hooks (removed when the step ends)."""

    def __init__(self, paths: dict[int, str], live: LiveBytes, trace: StepTrace) -> None:
        self.paths, self.live, self.trace = paths, live, trace
        self.open: list[str] = []
        # Every (path, peak) as calls end, while the memo records a block; else None.
        self.log: list[tuple[str, int]] | None = None
        self.touch: Any = None  # `_trace.Trace.touch`, before each module call

    def pre(self, module: nn.Module, args: Any) -> None:
        path = self.paths.get(id(module))
        if path is not None:
            if self.touch is not None:
                self.touch(module)
            self.open.append(path)
            self.live.enter()

    def post(self, module: nn.Module, args: Any, output: Any) -> None:
        path = self.paths.get(id(module))
        if path is not None and self.open and self.open[-1] == path:
            self.open.pop()
            top = self.live.leave()
            peaks = self.trace.peaks
            if top > peaks.get(path, 0):
                peaks[path] = top
            if self.log is not None:
                self.log.append((path, top))


@contextlib.contextmanager
def _flags(modules: list[nn.Module], training: bool) -> Iterator[None]:
    """Every module in train (or eval) mode for the step, each flag put back exactly after."""
    flags = [m.training for m in modules]
    try:
        for m in modules:
            set_training(m, training)
        yield
    finally:
        for m, flag in zip(modules, flags):
            set_training(m, flag)


@contextlib.contextmanager
def _attributes_kept(modules: list[nn.Module]) -> Iterator[None]:
    """A forward that caches a tensor on its module (a rotary table, a mask) would leave a fake
    there: restore each module's plain attributes that changed during the step."""
    before = [dict(vars(m)) for m in modules]
    try:
        yield
    finally:
        _put_back(modules, before)


def _put_back(modules: list[nn.Module], before: list[dict[str, Any]]) -> None:
    from torch._subclasses.fake_tensor import FakeTensor

    # The types of every attribute first, by C loops: usually no fake stayed, and no more is read
    # (a Python check per module and attribute was a large part of a deep model's step).
    seen: set[type] = set()
    for m in modules:
        seen.update(map(type, vars(m).values()))
    if not any(issubclass(t, FakeTensor) for t in seen):
        return
    for m, attrs in zip(modules, before):
        now = vars(m)
        for key in [k for k, v in now.items() if isinstance(v, FakeTensor)]:
            if key in attrs:
                now[key] = attrs[key]
            else:
                del now[key]


def _loss(output: Any) -> torch.Tensor | None:
    """A scalar to run backward from: the output's `loss` when the model computed one (Hugging
    Face models given labels), else the sum of every floating output that requires grad."""
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor) and loss.requires_grad:
        return loss
    total = None
    for leaf in pytree.tree_leaves(output):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad and leaf.is_floating_point():
            total = leaf.sum() if total is None else total + leaf.sum()
    return total


def trace_step(
    model: nn.Module,
    modules: list[tuple[str, nn.Module]],
    fake_mode: Any,
    tensors: dict[str, torch.Tensor] | LazyWeights,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    training: bool,
    memoise: bool = True,
    swap: dict[int, torch.Tensor] | None = None,
) -> StepTrace:
    """Run the step on `tensors` (fake parameters and buffers by name; or, for a forward without
    autograd, `LazyWeights` making them fake as ops meet them) and fake inputs; `modules` are the
    model's (path, module) pairs, each module once; `swap` maps each real tensor (by id) to the
    fake that stands in for it during the step (`swapped`). `memoise`: replay repeated blocks of
    a forward (`_memory.memo`; not when training)."""
    trace = StepTrace()
    live = LiveBytes()
    lazy = tensors if isinstance(tensors, LazyWeights) else None
    weights: dict[str, torch.Tensor] = {} if isinstance(tensors, LazyWeights) else tensors
    if lazy is not None:
        live.start(lazy.base)
        lazy.held, live.lazy = live.hold, lazy
    stack = _Stack({id(m): p for p, m in modules}, live, trace)
    fixed = {storage_key(t)[0] for t in weights.values()}
    seen: set[int] = set()

    def pack(t: torch.Tensor) -> torch.Tensor:
        key, nbytes = storage_key(t)
        if key not in fixed and key not in seen:  # weights are counted as weights
            seen.add(key)
            where = stack.open[-1] if stack.open else ""
            trace.saved[where] = trace.saved.get(where, 0) + nbytes
        return t

    for t in weights.values():
        live.track(t)
    for leaf in pytree.tree_leaves((args, kwargs)):
        if isinstance(leaf, torch.Tensor):
            live.track(leaf)
    objs = [m for _, m in modules]
    paths = {id(m): p for p, m in modules}
    with contextlib.ExitStack() as es:
        es.enter_context(_flags(objs, training))
        es.enter_context(_attributes_kept(objs))
        if lazy is not None:  # a forward that sets a parameter or buffer: the real one put back
            es.callback(undo_fake_state, snapshot_state(objs))
        es.enter_context(quiet_fake_logs())
        # No cyclic collection during the step: what is freed when follows reference counts only,
        # the same in every run (a collection's timing depends on how many objects were made, and
        # a memoised run makes fewer), and the step is faster.
        es.enter_context(_gc.paused())
        es.callback(module_hooks.register_module_forward_pre_hook(stack.pre).remove)
        es.callback(module_hooks.register_module_forward_hook(stack.post).remove)
        es.enter_context(fake_mode)
        es.enter_context(live)
        es.enter_context(torch.enable_grad() if training else torch.no_grad())
        memo = (
            StepMemo(model, modules, stack, live, fake_mode) if memoise and not training else None
        )
        if memo is not None and memo.stubbed:
            es.enter_context(memo.install())
        if training:
            es.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
        try:
            with swapped(objs, swap or {}):
                # What the forward writes besides (containers, counters, hooks, torch's flags),
                # put back and said (`_trace`); taken past the step's own changes (its hooks,
                # the weights swapped for fakes), which are not the forward's doing.
                watch = Trace(objs, paths, snapshot_state(objs), real=False)
                stack.touch = watch.touch
                trace.writes = watch.writes
                with watch:
                    output = model(*args, **kwargs)
            if training:
                loss = _loss(output)
                del output
                if loss is not None:
                    loss.backward()
                del loss
                trace.graded = {key for key, f in (swap or {}).items() if f.grad is not None}
            else:
                del output
        except Exception as exc:
            where = stack.open[-1] if stack.open else ""
            trace.error = f"{type(exc).__name__} in {where or 'the model'!r}: {exc}"
            trace.data_dependent = data_dependent_op(exc)
            trace.where = where
    trace.peak = live.peak
    if memo is not None:
        trace.memoised = memo.hits
    return trace


@contextlib.contextmanager
def swapped(modules: list[nn.Module], fakes: dict[int, torch.Tensor]) -> Iterator[None]:
    """Each module's parameters and buffers replaced by their fakes (by tensor id) for the step,
    and put back after, module object by module object: a module reached by two paths and a
    tensor tied between two modules are each handled once and restored exactly.
    ``torch.func.functional_call`` swaps by name and, for a module reached by two paths (timm's
    CoaT shares its convolutional position encodings), put back the second name's saved fake:
    fake weights stayed on the model."""
    saved: list[tuple[dict[str, Any], str, torch.Tensor]] = []
    try:
        for m in modules:
            tables: tuple[dict[str, Any], ...] = (m._parameters, m._buffers)
            for table in tables:
                for name, t in table.items():
                    if t is not None and id(t) in fakes:
                        saved.append((table, name, t))
        for table, name, t in saved:
            table[name] = fakes[id(t)]
        yield
    finally:
        for table, name, t in reversed(saved):
            table[name] = t
