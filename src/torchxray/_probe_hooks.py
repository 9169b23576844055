"""The probe's run context: hooks, modes and the guarantee that everything is undone afterwards.

`ProbeRun` is a context manager. Entering it sets every module to eval, enters ``torch.no_grad``
(and a ``FakeTensorMode`` in fake mode), registers two *global* module hooks and a FLOP counter.
Leaving it, whatever happened (exception, KeyboardInterrupt, CUDA OOM), undoes each of those in
reverse order, so no hook, mode or flag outlives the probe.

Global hooks (``register_module_forward_pre_hook`` / ``register_module_forward_hook``) instead of
one pair per module: registering and removing is O(1) rather than O(modules) (20k handles for a
10,000-module model), and the user's per-module hook dicts are never written to at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import time
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree

from ._probe_flops import FlopCount
from ._probe_records import CallRecord, TensorInfo

_SUMMARY_CHARS = 40


def _leaf_text(value: object) -> str:
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device)):
        text = repr(value)
        return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."
    return f"<{type(value).__name__}>"


# TensorInfo is frozen, so equal metadata can share one instance: a dict hit costs far less than
# converting the shape and formatting dtype and device (20,000 times for 10,000 small modules).
_INFOS: dict[tuple[Any, ...], TensorInfo] = {}
_INFO_LIMIT = 4096  # a bound, so a stream of new shapes cannot grow it without end


def _info(value: object, name: str) -> TensorInfo | str:
    if isinstance(value, torch.Tensor):
        key = (value.shape, value.dtype, value.device, name)
        try:
            return _INFOS[key]
        except (KeyError, TypeError):  # TypeError: a symbolic size does not hash
            pass
        info = TensorInfo(
            tuple(int(s) for s in value.shape),
            str(value.dtype).removeprefix("torch."),
            str(value.device),
            name,
        )
        if len(_INFOS) < _INFO_LIMIT:
            with contextlib.suppress(TypeError):
                _INFOS[key] = info
        return info
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # pytree does not flatten dataclasses; a model returning one still has tensors inside.
        return "<dataclass>"
    return _leaf_text(value)


def leaf_infos(value: object, name: str) -> tuple[TensorInfo | str, ...]:
    """Flatten `value` with torch.utils._pytree (dataclasses too) into TensorInfo / text leaves."""
    if isinstance(value, torch.Tensor):  # the common case, without pytree's cost
        return (_info(value, name),)
    if type(value) is tuple and len(value) == 1 and isinstance(value[0], torch.Tensor):
        return (_info(value[0], name + "[0]"),)  # a forward's usual args: (x,)
    if isinstance(value, tuple) and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(_info(v, f"{name}[{i}]") for i, v in enumerate(value))
    out: list[TensorInfo | str] = []
    for key_path, leaf in pytree.tree_flatten_with_path(value)[0]:
        leaf_name = name + pytree.keystr(key_path)
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            fields = {f.name: getattr(leaf, f.name) for f in dataclasses.fields(leaf)}
            out.extend(leaf_infos(fields, leaf_name))
        else:
            out.append(_info(leaf, leaf_name))
    return tuple(out)


def call_inputs(
    args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> tuple[TensorInfo | str, ...]:
    infos = leaf_infos(args, "args")
    return infos + leaf_infos(kwargs, "kwargs") if kwargs else infos


class Call:
    """A call in progress (mutable); turned into a frozen CallRecord when the report is built."""

    __slots__ = (
        "path", "module", "inputs", "outputs", "done", "t0", "time_ms",
        "ev0", "ev1", "mem0", "peak", "mem_alloc", "flops",
    )  # fmt: skip

    def __init__(self, path: str, module: nn.Module) -> None:
        self.path = path
        self.module = module
        self.inputs: tuple[TensorInfo | str, ...] = ()
        self.outputs: tuple[TensorInfo | str, ...] = ()
        self.done = False
        self.t0 = 0.0
        self.time_ms: float | None = None
        self.ev0: Any = None
        self.ev1: Any = None
        self.mem0 = 0
        self.peak = 0
        self.mem_alloc: int | None = None
        self.flops = 0


class ProbeRun:
    """Context manager running one probe; see the module docstring for what it guarantees."""

    def __init__(
        self, model: nn.Module, mode: str, device: torch.device, memoise: bool = True
    ) -> None:
        self.model = model
        self.memoise = memoise and mode == "fake"
        self.memo: Any = None
        self.mode = mode
        self.device = device
        named = list(model.named_modules())
        self.modules = [m for _, m in named]
        self.paths: dict[int, str] = {id(m): p for p, m in named}
        self.names: dict[str, str] = {p: type(m).__name__ for p, m in named}
        self.stack: list[Call] = []
        self.log: list[Call] = []
        self.fake_mode: Any = None
        self.count_flops = False
        self.cuda = mode == "real" and device.type == "cuda"
        self.timed = mode == "real"
        self._exit = contextlib.ExitStack()

    # -- setup / teardown ---------------------------------------------------------------------
    def __enter__(self) -> ProbeRun:
        es = self._exit
        try:
            flags = [(m, m.training) for m in self.modules]
            es.callback(_restore_training, flags)
            for m in self.modules:
                # Set the flag itself rather than calling .eval(): a user's train() override may do
                # more than flip flags, and we must restore exactly what was there.
                _set_training(m, False)
            es.enter_context(torch.no_grad())
            if self.mode == "fake":
                es.callback(_undo_fake_state, _snapshot_state(self.modules))
                from torch._subclasses.fake_tensor import FakeTensorMode

                # allow_non_fake_inputs: the model's real parameters are converted lazily to fake
                # views (memoised per tensor) on first use - no copy of their data, no new memory.
                self.fake_mode = es.enter_context(FakeTensorMode(allow_non_fake_inputs=True))
                # A meta kernel that fails logs a full traceback at ERROR level before raising; the
                # report already carries that error, so keep it out of the notebook's output.
                es.enter_context(_quiet_logger("torch._subclasses.fake_tensor"))
            es.enter_context(FlopCount(self.stack, self.fake_mode))
            self.count_flops = True
            pre = nn_module.register_module_forward_pre_hook(self._pre_hook)
            es.callback(pre.remove)
            post = nn_module.register_module_forward_hook(self._post_hook, with_kwargs=True)
            es.callback(_remove_global_forward_hook, post)
            if self.memoise:
                from ._probe_memo import Memo  # imports this module: import here, not at the top

                self.memo = Memo(self)
                es.callback(self.memo.restore)
            if self.cuda:
                # Events record on the current device's stream: make it the model's device.
                es.enter_context(torch.cuda.device(self.device))
                torch.cuda.synchronize(self.device)
        except BaseException:
            es.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.cuda:
                with contextlib.suppress(Exception):  # a broken device must not mask the real error
                    torch.cuda.synchronize(self.device)
                    self._cuda_times()
        finally:
            self._exit.close()
            for call in self.log:
                call.module = None  # type: ignore[assignment]  # keep no model object alive

    # -- hooks ----------------------------------------------------------------------------------
    def _pre_hook(self, module: nn.Module, args: tuple[Any, ...]) -> None:
        path = self.paths.get(id(module))
        if path is None:  # a module outside the probed model (or made inside its forward)
            return
        call = Call(path, module)
        if self.cuda:
            peak = torch.cuda.max_memory_allocated(self.device)
            for outer in self.stack:  # fold the peak so far into the callers before resetting it
                outer.peak = max(outer.peak, peak)
            torch.cuda.reset_peak_memory_stats(self.device)
            call.mem0 = call.peak = torch.cuda.memory_allocated(self.device)
            call.ev0 = torch.cuda.Event(enable_timing=True)
            call.ev0.record()
        elif self.timed:
            call.t0 = time.perf_counter()
        self.stack.append(call)
        self.log.append(call)

    def _post_hook(
        self, module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any
    ) -> None:
        if id(module) not in self.paths:
            return
        stack = self.stack
        # Pop to this module's call: calls above it raised an exception that a forward caught.
        while stack and stack[-1].module is not module:
            stale = stack.pop()
            self.log.remove(stale)
        if not stack:
            return
        call = stack.pop()
        if self.cuda:
            call.ev1 = torch.cuda.Event(enable_timing=True)
            call.ev1.record()
            peak = torch.cuda.max_memory_allocated(self.device)
            call.mem_alloc = torch.cuda.memory_allocated(self.device) - call.mem0
            call.peak = max(call.peak, peak)
            for outer in stack:
                outer.peak = max(outer.peak, peak)
        elif self.timed:
            call.time_ms = (time.perf_counter() - call.t0) * 1e3
        call.inputs = call_inputs(args, kwargs)
        call.outputs = leaf_infos(output, "")
        call.done = True

    def _cuda_times(self) -> None:
        for call in self.log:
            if call.ev0 is not None and call.ev1 is not None:
                call.time_ms = float(call.ev0.elapsed_time(call.ev1))

    # -- results --------------------------------------------------------------------------------
    def flops_of(self, call: Call) -> int | None:
        return call.flops if self.count_flops else None

    def record(self, call: Call) -> CallRecord:
        return CallRecord(
            inputs=call.inputs,
            outputs=call.outputs,
            flops=self.flops_of(call),
            time_ms=call.time_ms,
            mem_alloc=call.mem_alloc,
            mem_peak=(call.peak - call.mem0) if call.mem_alloc is not None else None,
            complete=call.done,
        )


def _remove_global_forward_hook(handle: Any) -> None:
    handle.remove()
    # torch's handle for a global forward hook forgets the with_kwargs flag it set (its
    # extra_dict names only the always_called dict), which would leave our id behind for good.
    getattr(nn_module, "_global_forward_hooks_with_kwargs", {}).pop(handle.id, None)


_State = tuple[nn.Module, dict[str, Any], dict[str, Any], dict[str, Any]]


def _snapshot_state(modules: list[nn.Module]) -> list[_State]:
    return [
        (m, dict(m._parameters), dict(m._buffers), {k: v for k, v in vars(m).items()})
        for m in modules
    ]


def _undo_fake_state(snapshot: list[_State]) -> None:
    """A forward that caches tensors on its module (a rotary table grown to a new length, a
    register_buffer call) would leave *fake* tensors in the model after a fake probe: put back
    what was there before for every module where a fake tensor turned up."""
    from torch._subclasses.fake_tensor import FakeTensor

    for m, params, buffers, attrs in snapshot:
        current = (*m._parameters.values(), *m._buffers.values(), *vars(m).values())
        if not any(isinstance(v, FakeTensor) for v in current):
            continue
        m._parameters.clear()
        m._parameters.update(params)
        m._buffers.clear()
        m._buffers.update(buffers)
        for key in [k for k, v in vars(m).items() if isinstance(v, FakeTensor)]:
            if key in attrs:
                m.__dict__[key] = attrs[key]
            else:
                del m.__dict__[key]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The probe makes many small objects; with a big heap (torch alone is large) the cyclic
    collector's passes took half of a 10,000-module probe. Refcounting still frees tensors as
    usual; only cycles wait until the probe is over (as timeit does)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _set_training(m: nn.Module, training: bool) -> None:
    if "training" in m.__dict__:  # the usual case: skip nn.Module.__setattr__ (~4 us a call)
        m.__dict__["training"] = training
    else:  # e.g. a ScriptModule keeps the flag in C++ behind its own __setattr__
        m.training = training


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _restore_training(flags: list[tuple[nn.Module, bool]]) -> None:
    for m, training in flags:
        _set_training(m, training)
