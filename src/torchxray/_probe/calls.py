"""Recording module calls: the `Call` a probe keeps per call, and `Recorder`, whose functions run a
forward and record it (inputs, outputs, time, CUDA memory) on the probe's call stack and log.

`_probe.wrap` installs those functions; FLOPs are added to the open calls by `_probe.flops`, and
repeated blocks are replayed by `_probe.memo`.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree
from torch.utils.hooks import RemovableHandle

from .._text import short
from . import cancel
from .contracts import contract_of
from .edges import Produced
from .finite import NonFinite
from .records import CallRecord, TensorInfo
from .sites import skipped_codes
from .values import Meta, call_inputs, leaf_infos, meta_info

# One tensor in / one tensor out keeps raw metadata (see `_probe.values`); tests turn it off to
# compare with the general path.
_FAST_META = True
# Call sites (one frame lookup per call) and dataflow edges (fake mode) are recorded; the bench
# (bench/flow_cost.py) turns this off for its "without" arm, to price them against a probe
# without them.
_TRACE_FLOW = True
_Leaves = tuple[TensorInfo | str, ...]


class Call:
    """One call in progress or done (mutable); `record` makes the frozen CallRecord.

    A plain class with class-level defaults: the recorder makes one per module call, and making
    one and setting three attributes costs about half as much as an ``__init__`` setting all
    fifteen.
    """

    path = ""
    # The leaves, or, for one tensor in / one tensor out, the raw metadata (`_probe.values`).
    inputs: _Leaves | None = None
    outputs: _Leaves | None = None
    in_meta: Meta | None = None
    out_meta: Meta | None = None
    done = False
    t0 = 0.0
    t1: float | None = None
    ev0: Any = None
    ev1: Any = None
    cuda_ms: float | None = None
    mem0 = 0
    peak = 0
    mem_alloc: int | None = None
    flops = 0
    # Where it was called from (`_probe.sites`): the caller's code and line, never its frame;
    # `parent` is the call that was open when it began (`_probe.flow`).
    code: types.CodeType | None = None
    line = 0
    parent: Call | None = None
    contract: tuple[str, ...] = ()  # where its forward's annotations disagree (`_probe.contracts`)

    @classmethod
    def made(
        cls,
        path: str,
        inputs: _Leaves,
        outputs: _Leaves,
        flops: int | None,
        done: bool = True,
        site: tuple[Any, ...] = (None, 0),
        parent: Call | None = None,
    ) -> Call:
        call = cls()
        call.path, call.inputs, call.outputs, call.done = path, inputs, outputs, done
        call.flops = flops or 0
        call.code, call.line, *checked = site  # the memo passes the contract's messages too
        call.contract = checked[0] if checked else ()
        call.parent = parent
        return call

    def where(self) -> tuple[Any, ...]:
        """Its site and contract messages, as `made` takes them (for the memo's replays)."""
        return (self.code, self.line, self.contract)

    def input_leaves(self) -> _Leaves:
        if self.in_meta is not None:
            return (meta_info(self.in_meta, "args[0]"),)
        return self.inputs or ()

    def output_leaves(self) -> _Leaves:
        if self.out_meta is not None:
            return (meta_info(self.out_meta, ""),)
        return self.outputs or ()

    def record(self, counted: bool) -> CallRecord:
        """The frozen record; `counted` says whether FLOPs were counted in this run."""
        if self.cuda_ms is not None:
            time_ms: float | None = self.cuda_ms
        elif self.t1 is not None:
            time_ms = (self.t1 - self.t0) * 1e3
        else:
            time_ms = None
        return CallRecord(
            inputs=self.input_leaves(),
            outputs=self.output_leaves(),
            flops=self.flops if counted else None,
            time_ms=time_ms,
            mem_alloc=self.mem_alloc,
            mem_peak=(self.peak - self.mem0) if self.mem_alloc is not None else None,
            complete=self.done,
        )


class Recorder:
    """The open calls (`stack`, innermost last) and every call so far (`log`, in call order), and
    the recording functions that `_probe.wrap` installs."""

    def __init__(self, timed: bool, device: torch.device) -> None:
        self.stack: list[Call] = []
        self.log: list[Call] = []
        self.device = device
        self.cuda = timed and device.type == "cuda"
        self.cpu_timed = timed and not self.cuda
        # The tensor whose metadata was read last, its version and its metadata: a module's input
        # is most often the tensor the previous module returned. Holding it keeps its id from
        # being reused; an in-place change (unsqueeze_, resize_, relu_) bumps its version.
        self.recent: list[Any] = [None, -1, None]
        # Real mode: the first call returning NaN/Inf from finite inputs (`_probe.finite`).
        self.nonfinite = NonFinite(real=timed, cuda=self.cuda)
        # Fake mode: which call produced each tensor, for the dataflow edges (`_probe.edges`).
        self.produced: Produced | None = None if timed or not _TRACE_FLOW else Produced()
        self.contracts: dict[type, Any] = {}  # per class: its forward's contract, or None
        self.cancel = cancel.current()  # set from another thread: stop at the next module call
        self.limits: list[str] = []  # what torchxray could not read (`unread`), for the report
        # Called with a module before its first call runs (`_trace.Trace.touch`): what it holds
        # is copied then, so that what its forward writes can be put back.
        self.touch: Callable[[Any], None] | None = None
        self.touched: set[int] = set()  # ids of the modules `touch` has seen (it adds them)
        # At a module's first call, after `touch`: True when it left the direct path because it
        # gained hooks (`_probe.wrap.Patches.first_call`); the call then goes through
        # nn.Module's own _call_impl, which runs them.
        self.rehome: Callable[[Any], bool] | None = None

    def function(
        self,
        original: Callable[..., Any],
        path_of: Callable[[int], str | None],
        call_forward: bool,
    ) -> Callable[..., Any]:
        """A function ``(module, *args, **kwargs)`` that records the call of the module at
        ``path_of(id(module))`` around ``module.forward(*args, **kwargs)`` (`call_forward`, bound
        as a module's instance ``_call_impl``) or around ``original(module, *args, **kwargs)``
        (as an instance's ``forward``). A module without a path goes to ``original`` unrecorded."""
        rec = self
        stack, log, recent = self.stack, self.log, self.recent
        cpu_timed, cuda = self.cpu_timed, self.cuda
        clock = time.perf_counter
        tensor = torch.Tensor
        fast = _FAST_META
        watch = self.nonfinite
        getframe = sys._getframe
        produced = self.produced
        contracts = self.contracts
        leaves = pytree.tree_leaves
        skip = _SKIPPED
        sites = _TRACE_FLOW
        token = self.cancel
        touch = self.touch
        touched = self.touched
        rehome = self.rehome
        module_call = torch.nn.Module._call_impl
        # Every hook registered takes the next handle id: while it has not moved since the probe
        # began, no module gained a hook, and the direct path's ``forward`` call is all there is.
        handles, first_handle = RemovableHandle, RemovableHandle.next_id

        def meta(x: torch.Tensor) -> Meta:
            """`x`'s metadata, read now (the caller checked `recent` already)."""
            got = (x.shape, x.dtype, x.device)
            try:
                recent[0], recent[1], recent[2] = x, x._version, got
            except RuntimeError:  # an inference tensor keeps no version: read it every time
                recent[0] = None
            return got

        # `self`, `args`, `kwargs`: the names `probe._module_frames` reads from a failed call.
        def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
            path = path_of(id(self))
            if path is None:
                return original(self, *args, **kwargs)
            if token is not None and token.is_set:
                token.where = path
                raise cancel.ProbeCancelled(f"probe cancelled before {path or '(root)'}")
            if touch is not None and id(self) not in touched:
                touch(self)
                if call_forward and rehome is not None and rehome(self):
                    return module_call(self, *args, **kwargs)
            call = Call()
            call.path = path
            # The caller: the frame that called `module(...)`, past torch's __call__ machinery
            # and our own recording frames (for the direct path, the very next frame).
            f: types.FrameType | None = getframe(1) if sites else None
            while f is not None and id(f.f_code) in skip:
                f = f.f_back
            if f is not None:
                call.code, call.line = f.f_code, f.f_lineno
            if stack:
                call.parent = stack[-1]
            # Inputs as the forward receives them, taken before it can change them in place.
            # What is recorded here is torchxray's work, never the model's: should reading a value
            # fail, the forward still runs and the report says what could not be read.
            try:
                if fast and len(args) == 1 and not kwargs and isinstance(x := args[0], tensor):
                    # The common hit inline: `x` was read before, so its version can be read again.
                    hit = x is recent[0] and x._version == recent[1]
                    call.in_meta = recent[2] if hit else meta(x)
                else:
                    call.inputs = call_inputs(args, kwargs)
                if produced is not None:
                    one = len(args) == 1 and not kwargs and isinstance(args[0], tensor)
                    produced.consume(call, args if one else leaves((args, kwargs)))
            except Exception as exc:  # noqa: BLE001 - see above
                rec.unread(call, "inputs", exc)
            stack.append(call)
            log.append(call)
            if cuda:
                rec._cuda_begin(call)
            elif cpu_timed:
                call.t0 = clock()
            if call_forward:
                if handles.next_id != first_handle and hooked(self):
                    # A hook registered during the run (transformers installs its output-capturing
                    # hooks on a model's first call): called as torch calls it, hooks and all.
                    out = original(self, *args, **kwargs)
                else:
                    out = self.forward(*args, **kwargs)
            else:
                out = original(self, *args, **kwargs)
            if cuda:
                rec._cuda_end(call)
            elif cpu_timed:
                call.t1 = clock()
            if stack[-1] is not call:
                rec._drop_stale(call)
            stack.pop()
            call.done = True
            try:
                if fast and isinstance(out, tensor):
                    hit = out is recent[0] and out._version == recent[1]
                    call.out_meta = recent[2] if hit else meta(out)
                else:
                    call.outputs = leaf_infos(out, "")
                kind = type(self)
                checked = contracts.get(kind, contracts)
                if checked is contracts:
                    checked = contracts[kind] = contract_of(kind)
                if checked is not None:
                    call.contract = checked.check(self, args, kwargs, out)
                if produced is not None:
                    got = (out,) if isinstance(out, tensor) else leaves(out)
                    produced.produce(call, got, bool(self._modules))
                if watch.active:
                    watch.check(call, out, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - the forward ran; only our reading failed
                rec.unread(call, "outputs", exc)
            return out

        return recorded

    def unread(self, call: Call, part: str, exc: Exception) -> None:
        """Reading a call's inputs or outputs failed (a value type torchxray cannot open): the
        call keeps a placeholder and the report lists the failure as torchxray's limitation."""
        text = f"<not read: {type(exc).__name__}>"
        if part == "inputs":
            call.inputs, call.in_meta = (text,), None
        else:
            call.outputs, call.out_meta = (text,), None
        where = call.path or "(root)"
        note = f"torchxray could not read the {part} of {where}: {type(exc).__name__}: {exc}"
        if len(self.limits) < 20 and note not in self.limits:
            self.limits.append(short(note, 300))

    def release(self) -> None:
        self.recent[:] = [None, -1, None]
        if self.produced is not None:
            self.produced.release()

    def _drop_stale(self, call: Call) -> None:
        # Calls above this one raised an exception that a forward caught: they never finished.
        stack = self.stack
        while stack and stack[-1] is not call:
            self.log.remove(stack.pop())

    def _allocated(self) -> tuple[int, int]:
        """Bytes the allocator holds for tensors now, and at its peak since the last reset, from
        one read of its counters. ``memory_allocated()`` and ``max_memory_allocated()`` each
        flatten every counter into a new dict first, which made a real probe of a small Llama
        CPU-bound."""
        stat = torch.cuda.memory_stats_as_nested_dict(self.device)["allocated_bytes"]["all"]
        return stat["current"], stat["peak"]

    def _cuda_begin(self, call: Call) -> None:
        now, peak = self._allocated()
        for outer in self.stack[:-1]:  # fold the peak so far into the callers before resetting it
            outer.peak = max(outer.peak, peak)
        torch.cuda.reset_peak_memory_stats(self.device)
        call.mem0 = call.peak = now
        call.ev0 = torch.cuda.Event(enable_timing=True)
        call.ev0.record()

    def _cuda_end(self, call: Call) -> None:
        call.ev1 = torch.cuda.Event(enable_timing=True)
        call.ev1.record()
        now, peak = self._allocated()
        call.mem_alloc = now - call.mem0
        call.peak = max(call.peak, peak)
        for outer in self.stack:
            outer.peak = max(outer.peak, peak)

    def cuda_times(self) -> None:
        """After a synchronize: each call's CUDA event time, and the events let go."""
        for call in self.log:
            if call.ev0 is not None:  # only calls the recorder timed hold events
                if call.ev1 is not None:
                    call.cuda_ms = float(call.ev0.elapsed_time(call.ev1))
                call.ev0 = call.ev1 = None
        self.nonfinite.resolve()


def hooked(m: Any) -> bool:
    """Whether a call of `m` runs hooks: its own, or global module hooks."""
    return bool(
        m._forward_hooks
        or m._forward_pre_hooks
        or m._backward_hooks
        or m._backward_pre_hooks
        or nn_module._global_forward_hooks
        or nn_module._global_forward_pre_hooks
        or nn_module._global_backward_hooks
        or nn_module._global_backward_pre_hooks
    )


def inner_code(fn: Any, name: str) -> types.CodeType:
    """The code object of the function `name` defined inside `fn`: what a traceback frame running
    any function it makes has as ``f_code``."""
    return next(
        c for c in fn.__code__.co_consts if isinstance(c, types.CodeType) and c.co_name == name
    )


# The code of every recording function: a traceback frame running it is a module call
# (`probe._module_frames`).
RECORDED_CODE = inner_code(Recorder.function, "recorded")
_SKIPPED = skipped_codes() | {id(RECORDED_CODE)}
