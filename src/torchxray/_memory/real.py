"""`tx.memory(..., mode="real")`: the step run for real on a CUDA model and measured with the
caching allocator, as comparable with the fake estimate as one can make it.

- `params`, `buffers`: the real tensors, each once (as in fake mode).
- `grads`: the trainable parameters that have a `.grad` after the real backward (autograd gives a
  gradient its parameter's shape and dtype; a parameter the forward never used has none).
- `optimizer`: the state a real first `step()` creates, read from its tensors: the step is taken
  by a new optimizer of the requested class and options over *clones* of the parameters given the
  run's gradients, so the model's weights are never written (state the user's optimizer already
  holds is read as it is, as in fake mode).
- `activations`: what autograd saves for backward in the real forward, from saved-tensor hooks,
  each storage once, the weights left out, charged to the innermost module whose forward ran.
- `peak`: the allocator's peak over the forward (and backward) minus what was allocated just
  before it, plus the bytes the run starts from (weights, buffers and inputs on the device, each
  storage once), plus the optimizer state when training: the fake definition. What else the
  process holds on the device does not count; the optimizer step's own temporaries do not either
  (as in fake mode), nor do they for a module's `peak` (its forward's highest reading, the same
  way). Readings include what the fake run cannot see: the allocator's rounding to 512 bytes and
  kernel workspaces (cuDNN); the cuBLAS workspaces are made before the first reading.

Nothing of the model changes: train/eval flags, gradients (the very tensors, None staying None),
parameters and buffers (a forward's in-place buffer updates, BatchNorm's running statistics, are
copied back; a replaced parameter, buffer or tensor attribute is put back), the user's optimizer
and the RNG state; the run's memory goes back to the device (`empty_cache`) whatever happened.
The allocator's peak counter is reset as the run reads it (as the real probe does): read
`torch.cuda.max_memory_allocated()` before the call if you need its earlier value.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.utils import _pytree as pytree

from .._fake.state import kept_state, snapshot_state
from .._trace.trace import Trace
from .cpu_meter import CpuMeter
from .live import storage_key
from .optim import NAMES, _state_of
from .trace import StepTrace, _flags, _loss

__all__ = ["RealStep", "measure"]

# The optimizer a name stands for (`_memory.optim.NAMES` says how many state tensors each keeps).
_CLASSES: dict[str, tuple[type[torch.optim.Optimizer], dict[str, Any]]] = {
    "adamw": (torch.optim.AdamW, {}),
    "adam": (torch.optim.Adam, {}),
    "sgd": (torch.optim.SGD, {"lr": 1e-3, "momentum": 0.9}),
    "rmsprop": (torch.optim.RMSprop, {}),
    "adagrad": (torch.optim.Adagrad, {}),
}
assert set(_CLASSES) == set(NAMES)

_WARM = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class CudaMeter:
    """The allocator's counters of one device: bytes allocated now and at the peak since the last
    reset, from one read (`_probe.calls.Recorder._allocated` says why not memory_allocated())."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def read(self) -> tuple[int, int]:
        stat = torch.cuda.memory_stats_as_nested_dict(self.device)["allocated_bytes"]["all"]
        return int(stat["current"]), int(stat["peak"])

    def reset(self) -> None:
        torch.cuda.reset_peak_memory_stats(self.device)

    def warm(self, dtypes: set[torch.dtype]) -> None:
        """A small matmul forward and backward per dtype: cuBLAS makes its workspace (MiBs, kept
        for good) for this thread and autograd's device thread now, not inside the measured step."""
        for dtype in sorted(dtypes & set(_WARM), key=str):
            with torch.enable_grad():
                a = torch.ones(8, 8, device=self.device, dtype=dtype, requires_grad=True)
                nn.functional.linear(a, a, a[0]).sum().backward()

    def release(self) -> None:
        with contextlib.suppress(Exception):  # a broken device must not mask the real error
            torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()


def cuda_device(tensors: list[torch.Tensor]) -> torch.device:
    """The one CUDA device holding every parameter and buffer, or a ValueError saying why not."""
    devices = sorted({str(t.device) for t in tensors})
    if len(devices) == 1 and devices[0].startswith("cuda"):
        return torch.device(devices[0])
    if not devices:
        where = "has no parameters or buffers to place it"
    elif all(d.startswith("cuda") for d in devices):
        where = f"is spread over {', '.join(devices)}; it measures one device"
    else:
        where = f"is on {', '.join(devices)}"
    raise ValueError(
        f"mode='real' measures with the CUDA allocator; this model {where}: "
        "use the default fake mode"
    )


@dataclass
class RealStep:
    """What `measure` found: the trace (saved bytes and peaks, as the fake trace's), the ids of
    the parameters that got a gradient, and optimizer state bytes per parameter id."""

    trace: StepTrace
    grad_ids: set[int]
    opt: dict[int, int]


class _Spans:
    """Module calls in progress (global forward hooks), each one's highest allocator reading, and
    what autograd saves, charged to the innermost call. The peak counter is reset as each call
    starts and ends, its reading folded into the calls around it first."""

    def __init__(self, paths: dict[int, str], meter: Any, weights: set[int]) -> None:
        self.paths, self.meter, self.weights = paths, meter, weights
        self.open: list[str] = []
        self.spans: list[int] = []
        self.peaks: dict[str, int] = {}
        self.saved: dict[str, int] = {}
        self.seen: set[int] = set()
        self.top = 0
        self.touch: Any = None  # `_trace.Trace.touch`, before each module call

    def fold(self) -> int:
        now, peak = self.meter.read()
        self.top = max(self.top, peak)
        if self.spans and peak > self.spans[-1]:
            self.spans[-1] = peak
        self.meter.reset()
        return now

    def pre(self, module: nn.Module, args: Any) -> None:
        path = self.paths.get(id(module))
        if path is not None:
            if self.touch is not None:
                self.touch(module)
            now = self.fold()
            self.open.append(path)
            self.spans.append(now)

    def post(self, module: nn.Module, args: Any, output: Any) -> None:
        path = self.paths.get(id(module))
        if path is not None and self.open and self.open[-1] == path:
            self.fold()
            self.open.pop()
            top = self.spans.pop()
            if self.spans and top > self.spans[-1]:
                self.spans[-1] = top
            if top > self.peaks.get(path, 0):
                self.peaks[path] = top

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        key, nbytes = storage_key(t)
        if key not in self.weights and key not in self.seen:
            self.seen.add(key)
            where = self.open[-1] if self.open else ""
            self.saved[where] = self.saved.get(where, 0) + nbytes
        return t


def measure(
    model: nn.Module,
    modules: list[tuple[str, nn.Module]],
    params: list[torch.Tensor],
    buffers: list[torch.Tensor],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    training: bool,
    optimizer: Any,
    cpu: bool = False,
) -> RealStep:
    """Run the step for real (see the module docstring); `params` and `buffers` each once.
    ``cpu``: a CPU model, measured by `_memory.cpu_meter.CpuMeter` (the data-dependent fallback
    of a fake `tx.memory`)."""
    meter: Any
    if cpu:
        device, meter = torch.device("cpu"), CpuMeter()
    else:
        device = cuda_device([*params, *buffers])
        meter = CudaMeter(device)
    objs = [m for _, m in modules]
    with contextlib.ExitStack() as es:
        es.callback(meter.release)  # last of all, when the run's tensors are gone
        if cpu:
            es.enter_context(meter)
        if device.type == "cuda":
            es.enter_context(torch.cuda.device(device))
        rng = [device.index or 0] if device.type == "cuda" else []
        es.enter_context(torch.random.fork_rng(devices=rng, device_type=device.type))
        es.enter_context(_flags(objs, training))
        es.enter_context(kept_state(objs, buffers))
        es.enter_context(_grads_aside(params))
        meter.warm({p.dtype for p in params if p.is_floating_point()})
        trace = _step(model, modules, params, buffers, args, kwargs, training, device, meter)
        trace.device = str(device)
        grad_ids: set[int] = set()
        opt: dict[int, int] = {}
        if trace.error is None and training:
            graded = [p for p in params if p.requires_grad and p.grad is not None]
            grad_ids = {id(p) for p in graded}
            if optimizer is not None:
                opt = optimizer_bytes(optimizer, graded)
    return RealStep(trace, grad_ids, opt)


def _step(
    model: nn.Module,
    modules: list[tuple[str, nn.Module]],
    params: list[torch.Tensor],
    buffers: list[torch.Tensor],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    training: bool,
    device: torch.device,
    meter: Any,
) -> StepTrace:
    """The forward (and backward) itself; every tensor it makes is let go of when it returns."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    leaves = [
        x.to(device) if isinstance(x, torch.Tensor) and x.device != device else x for x in leaves
    ]
    rargs, rkwargs = pytree.tree_unflatten(leaves, spec)
    weights = {storage_key(t)[0]: storage_key(t)[1] for t in (*params, *buffers)}
    inputs = {
        storage_key(t)[0]: storage_key(t)[1]
        for t in leaves
        if isinstance(t, torch.Tensor) and t.device == device
    }
    held = sum({**inputs, **weights}.values())  # what the fake run starts from, each storage once
    spans = _Spans({id(m): p for p, m in modules}, meter, set(weights))
    trace = StepTrace()
    base = spans.fold()
    spans.top = base
    try:
        with contextlib.ExitStack() as es:
            es.callback(module_hooks.register_module_forward_pre_hook(spans.pre).remove)
            es.callback(module_hooks.register_module_forward_hook(spans.post).remove)
            es.enter_context(torch.enable_grad() if training else torch.no_grad())
            if training:
                es.enter_context(torch.autograd.graph.saved_tensors_hooks(spans.pack, _same))
            # What the forward writes besides (attributes, containers, hooks a library registers
            # on its first call, in-place weights, torch's flags), put back and said, as the real
            # probe does; taken past the step's own hooks (issue 58: transformers' output-capture
            # hooks and flag stayed on the model after a CPU step).
            objs = [m for _, m in modules]
            watch = Trace(objs, {id(m): p for p, m in modules}, snapshot_state(objs), real=True)
            spans.touch = watch.touch
            # No in-place guard: restoring a weight's values between the forward and the
            # backward would break autograd's saved tensors; `kept_state` puts buffers back.
            with watch:
                output = model(*rargs, **rkwargs)
            trace.writes = watch.writes
            loss = _loss(output) if training else None
            del output
            es.close()  # hooks off before backward: it saves nothing and runs no forward
            if loss is not None:
                loss.backward()
            del loss
    except Exception as exc:
        where = spans.open[-1] if spans.open else ""
        trace.error = f"{type(exc).__name__} in {where or 'the model'!r}: {exc}"
    spans.fold()
    offset = held - base
    trace.saved = spans.saved
    trace.peaks = {p: v + offset for p, v in spans.peaks.items()}
    trace.peak = spans.top + offset
    return trace


def _same(t: torch.Tensor) -> torch.Tensor:
    return t


def optimizer_bytes(optimizer: Any, params: list[torch.Tensor]) -> dict[int, int]:
    """{id(param): bytes of its state} from a real first step over clones of `params` (which hold
    the run's gradients); state the user's optimizer already has is read as it is."""
    wanted = {id(p) for p in params}
    out: dict[int, int] = {}
    cls: Any  # a subclass may take its options as keywords of its own
    if isinstance(optimizer, str):
        cls, options = _CLASSES[optimizer.lower()]
        groups = [{"params": list(params)}]
    else:
        cls, options = type(optimizer), dict(optimizer.defaults)
        groups = []
        for g in optimizer.param_groups:
            todo = []
            for p in g["params"]:
                if id(p) in wanted and optimizer.state.get(p):
                    out[id(p)] = _state_of(optimizer.state[p])
                elif id(p) in wanted:
                    todo.append(p)
            if todo:
                groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": todo})
    origin: list[tuple[int, torch.Tensor]] = []
    for g in groups:
        clones = []
        for p in g["params"]:
            c = p.detach().clone().requires_grad_(True)
            c.grad = p.grad
            clones.append(c)
            origin.append((id(p), c))
        g["params"] = clones
    if not origin:
        return out
    failed, twin = None, None
    try:
        try:
            twin = cls(groups, **options)
        except TypeError:  # a subclass whose own signature takes no such options
            twin = cls(groups)
        twin.step()
        out.update({pid: _state_of(twin.state.get(c, {})) for pid, c in origin})
    except Exception as exc:
        failed = f"{type(exc).__name__}: {exc}"
    if failed is not None:
        origin.clear()  # the copies are let go of before the error leaves with this frame
        groups.clear()
        twin = None
        raise ValueError(
            f"memory(mode='real'): a step of {cls.__name__} on copies of the parameters raised "
            f"{failed}"
        )
    return out


@contextlib.contextmanager
def _grads_aside(params: list[torch.Tensor]) -> Iterator[None]:
    """Each parameter's gradient set aside (None for the run) and put back, the same tensor."""
    saved = [p.grad for p in params]
    try:
        for p in params:
            p.grad = None
        yield
    finally:
        for p, g in zip(params, saved):
            p.grad = g
