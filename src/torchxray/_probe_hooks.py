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
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from ._probe_records import CallRecord, TensorInfo

_SUMMARY_CHARS = 40


def _leaf_text(value: object) -> str:
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device)):
        text = repr(value)
        return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."
    return f"<{type(value).__name__}>"


def _info(value: object, name: str) -> TensorInfo | str:
    if isinstance(value, torch.Tensor):
        return TensorInfo(
            tuple(int(s) for s in value.shape),
            str(value.dtype).removeprefix("torch."),
            str(value.device),
            name,
        )
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # pytree does not flatten dataclasses; a model returning one still has tensors inside.
        return "<dataclass>"
    return _leaf_text(value)


def leaf_infos(value: object, name: str) -> tuple[TensorInfo | str, ...]:
    """Flatten `value` with torch.utils._pytree (dataclasses too) into TensorInfo / text leaves."""
    if isinstance(value, torch.Tensor):  # the common case, without pytree's cost
        return (_info(value, name),)
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


def _shape_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.shape
    if type(value) in (list, tuple):
        return type(value)(v.shape if isinstance(v, torch.Tensor) else v for v in value)
    return value


def _mm_flops(a: Any, b: Any, *_: Any, **__: Any) -> int:
    return 2 * int(a[0]) * int(a[1]) * int(b[1])


def _bmm_flops(a: Any, b: Any, *_: Any, **__: Any) -> int:
    return 2 * int(a[0]) * int(a[1]) * int(a[2]) * int(b[2])


def _formulas() -> dict[Any, Any]:
    """torch's FLOP formulas by op, unwrapped from their pytree shape wrapper when possible.

    The wrapper maps every argument through tree_map (two pytree passes per matmul, most of the
    counting cost in real mode); the formulas only ever look one level deep, so `_shape_of` does.
    """
    table: dict[Any, Any] = {}
    for op, formula in flop_registry.items():
        raw = getattr(formula, "__wrapped__", None)
        table[op] = (raw, True) if raw is not None else (formula, False)
    aten = torch.ops.aten
    # The matmul formulas call each other through the wrapper (tree_map again): ~28 us of a 38 us
    # counted Linear on small inputs. The same arithmetic, directly (test_probe checks the totals
    # against FlopCounterMode).
    table[aten.mm] = (_mm_flops, True)
    table[aten.addmm] = (lambda bias, a, b, **_: _mm_flops(a, b), True)
    table[aten.bmm] = (_bmm_flops, True)
    table[aten.baddbmm] = (lambda bias, a, b, **_: _bmm_flops(a, b), True)
    # The CPU attention kernel has no formula in torch, so CPU and meta/CUDA models disagreed
    # on attention FLOPs; it takes (query, key, value, ...) like the flash kernel.
    flash = table.get(aten._scaled_dot_product_flash_attention)
    cpu_flash = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if flash is not None and cpu_flash is not None:
        table.setdefault(cpu_flash, flash)
    return table


_FORMULAS = _formulas()
_BY_OP: dict[int, tuple[Any, Any]] = {}


class _FlopCount(TorchDispatchMode):
    """Adds each op's FLOPs (torch.utils.flop_counter's formulas) to every open call.

    Hand-written rather than FlopCounterMode itself: FlopCounterMode tries a decomposition for
    every op without a formula and tracks modules with hooks of its own; measured on 10,000 small
    ops it cost 75 us per op against 28 us here (less still with `_formulas`), which decides
    whether real mode stays near a bare forward. The formulas, the part worth sharing, are torch's.
    """

    def __init__(self, stack: list[Call]) -> None:
        super().__init__()
        self.stack = stack

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if not self.stack:
            return out
        # Looked up by id: OpOverloadPacket's __hash__ is Python code, ~1 us per op otherwise.
        seen = _BY_OP.get(id(func))
        if seen is None or seen[0] is not func:
            seen = _BY_OP[id(func)] = (func, _FORMULAS.get(func._overloadpacket))
        entry = seen[1]
        if entry is not None:
            formula, raw = entry
            if raw:
                shapes = [_shape_of(a) for a in args]
                named = {k: _shape_of(v) for k, v in kwargs.items()}
                flops = int(formula(*shapes, out_shape=_shape_of(out), **named))
            else:
                flops = int(formula(*args, **kwargs, out_val=out))
            for call in self.stack:
                call.flops += flops
        return out


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
            es.enter_context(_FlopCount(self.stack))
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
