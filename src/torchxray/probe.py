"""Shape probe: run a model once and record what every module received and returned.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> rep = tx.probe(model, torch.randn(3, 4))  # fake tensors: no memory used, nothing computed
    >>> rep["2"].input_shapes, rep["2"].output_shapes, rep["0"].flops
    (((3, 8),), ((3, 2),), 192)

``mode="fake"`` runs the forward on fake tensors (``FakeTensorMode``) over the model's own
parameters, which are viewed, never copied: it works for CPU, CUDA and meta models of any size.
``mode="real"`` runs on real tensors where the model lives and measures per-module time (and CUDA
memory). It counts no FLOPs unless asked (``flops=True``): counting intercepts every op in Python
(~16 us an op), which would slow the forward and inflate the times it measures; fake mode counts
them at no cost to anything. Either way the inputs are moved to the model's device and the model
never is.

A module's record is what its forward received and returned: after its own forward pre-hooks,
before its forward hooks (which still run as usual). Calls through the module (``module(x)``) are
recorded; a direct ``module.forward(x)`` call in general is not, as with hooks. The probe adds no
hook to anything: `_probe_wrap` says how it reaches every call instead.

During the probe every module is in eval mode (so BatchNorm statistics and similar training state
are not updated) and gradients are off; afterwards each module's own train/eval flag is restored,
whatever the probe replaced to record calls is put back, no tensor of the run stays allocated and,
after a GPU probe, the CUDA cache is emptied. This holds after an exception too. Exceptions from
the forward (CUDA out-of-memory included) become a failed report
(``rep.ok`` False, ``rep.error`` naming the innermost module that raised); KeyboardInterrupt is
re-raised after the clean-up.

Fake mode runs a block whose structure and input metadata it has seen before only once and copies
the records (``rep.memoised`` lists the skipped paths): 80 identical decoder layers cost one. Fake
tensors a forward caches on its modules are removed afterwards. Models with uninitialised lazy
modules are refused (a failed report), since running them would initialise them.

Records are made when first read (``rep.records`` is a mapping that builds each record on first
access); the report holds metadata only, never a tensor or the model.

Note: ``mode`` and ``flops`` are taken by the probe, so a model whose forward has an argument of
either name cannot get it through ``probe``'s keyword arguments.
"""

from __future__ import annotations

import gc
import os
import time
import types
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from ._probe_calls import RECORDED_CODE, Call, inner_code
from ._probe_records import (
    CallRecord,
    DiffEntry,
    LazyRecords,
    ModuleRecord,
    ProbeDiff,
    ProbeError,
    ProbeReport,
    TensorInfo,
)
from ._probe_run import ProbeRun, gc_paused
from ._probe_values import call_inputs

__all__ = [
    "CallRecord",
    "DiffEntry",
    "ModuleRecord",
    "ProbeDiff",
    "ProbeError",
    "ProbeReport",
    "TensorInfo",
    "probe",
]

_MODES = ("fake", "real")
_CALL_IMPL_CODE = nn.Module._call_impl.__code__


def probe(
    model: nn.Module, *args: Any, mode: str = "fake", flops: bool | None = None, **kwargs: Any
) -> ProbeReport:
    """Run ``model(*args, **kwargs)`` once, recording every module call; return a `ProbeReport`.

    ``flops``: count FLOPs per module (default: in fake mode yes, in real mode no; see above).
    Raises TypeError for a non-module and ValueError for an unknown mode; everything that goes
    wrong *inside* the forward (wrong input shape, dtype or count included) gives a failed report.
    """
    return run_probe(model, args, kwargs, mode=mode, flops=flops)


def run_probe(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    mode: str = "fake",
    memoise: bool = True,
    flops: bool | None = None,
) -> ProbeReport:
    """`probe` with explicit arguments; ``memoise=False`` runs every block (tests compare both)."""
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"probe() needs a torch.nn.Module, got {type(model).__name__}; "
            "wrap a plain function in an nn.Module whose forward calls it"
        )
    if mode not in _MODES:
        raise ValueError(f"probe mode must be 'fake' or 'real', got {mode!r}")
    if flops is None:
        flops = mode == "fake"
    elif not isinstance(flops, bool):
        raise TypeError(f"probe(flops=...) takes True, False or None, got {flops!r}")
    with gc_paused():
        return _run(model, args, kwargs, mode, memoise, flops)


def _run(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    mode: str,
    memoise: bool,
    flops: bool,
) -> ProbeReport:
    device = model_device(model)
    run = ProbeRun(model, mode, device, memoise, flops)
    names = run.names
    start = time.perf_counter()
    failed = True  # also when _execute raises (KeyboardInterrupt)
    try:
        error = _execute(run, args, kwargs, names)
        failed = error is not None
    finally:
        if device.type == "cuda":
            if failed:
                # Tracebacks and cycles can hold a failed run's activations. A successful run's
                # are released when _execute returns, and a full collection cost 85-120 ms per
                # probe on an H200's host: more than the 1 B-parameter Llama's forward (54 ms).
                gc.collect()
            torch.cuda.empty_cache()  # the run's cached blocks go back to the device
    wall_ms = (time.perf_counter() - start) * 1e3

    def build(path: str, calls: list[Call]) -> ModuleRecord:
        made = tuple(call.record(flops) for call in calls)
        return ModuleRecord.from_calls(path, names.get(path, "?"), made)

    # The builder holds the calls and the names, nothing of `run`: a report keeps no model alive.
    records = LazyRecords(run.log, build)
    total = None
    if flops and error is None:
        total = sum(call.flops for call in run.log if call.path == "")
    return ProbeReport(
        ok=error is None,
        mode=mode,
        device=str(device),
        records=records,
        error=error,
        total_flops=total,
        wall_ms=wall_ms,
        memoised=tuple(run.memo.hits) if run.memo is not None else (),
        aliases=run.aliases,
    )


def model_device(model: nn.Module) -> torch.device:
    """The device of the first parameter (else buffer); CPU for a model without tensors."""
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")


def _execute(
    run: ProbeRun, args: tuple[Any, ...], kwargs: dict[str, Any], names: dict[str, str]
) -> ProbeError | None:
    # A function of its own so that inputs and outputs are released when it returns.
    lazy = _first_lazy(run)
    if lazy is not None:
        return lazy
    with run:
        try:
            args, kwargs = _prepare_inputs(run, args, kwargs)
            run.model(*args, **kwargs)
        except Exception as exc:
            return _localise(run, exc, names, args, kwargs)
    return None


def _first_lazy(run: ProbeRun) -> ProbeError | None:
    """Lazy modules initialise themselves on their first forward, which would change the model
    (and, under fake tensors, give it fake parameters): refuse instead."""
    path = run.lazy
    if path is not None:
        return ProbeError(
            path=path,
            cls=run.names[path],
            exc_type="ValueError",
            message="this lazy module has uninitialised parameters; a probe must not "
            "initialise them because that changes the model",
            input_shapes=(),
            hint="run the model once yourself (model(*example_inputs)) to initialise its lazy "
            "modules, then probe it",
        )
    return None


def _prepare_inputs(
    run: ProbeRun, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if not any(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return args, kwargs
    device = run.device
    moved: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            tensor: torch.Tensor = leaf
            if run.fake_mode is not None:
                # A fake view of the input (meta inputs included): no copy, whatever its size.
                tensor = run.fake_mode.from_tensor(tensor)
            if tensor.device != device:
                tensor = tensor.to(device)
            leaf = tensor
        moved.append(leaf)
    return pytree.tree_unflatten(moved, spec)  # type: ignore[no-any-return]


def _module_frames(run: ProbeRun, exc: BaseException) -> list[tuple[nn.Module, types.FrameType]]:
    """The probed modules whose call the exception passed through, outermost first: frames of
    torch's ``_call_impl`` or of the probe's recording functions (`_probe_wrap`). A module called
    through both (hooks, then its recorded forward) is listed once, with its outer frame."""
    chain: list[tuple[nn.Module, types.FrameType]] = []
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is _CALL_IMPL_CODE or frame.f_code is RECORDED_CODE:
            module = frame.f_locals.get("self")
            if (
                isinstance(module, nn.Module)
                and id(module) in run.paths
                and not (chain and chain[-1][0] is module)
            ):
                chain.append((module, frame))
        tb = tb.tb_next
    return chain


def _localise(
    run: ProbeRun,
    exc: Exception,
    names: dict[str, str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> ProbeError:
    chain = _module_frames(run, exc)
    through = {run.paths[id(module)] for module, _ in chain}
    # Calls still open: those the exception went through stay (as incomplete calls); the others
    # were cut short by an exception a forward caught earlier and are dropped.
    for call in run.stack:
        if call.path not in through:
            run.log.remove(call)
    run.stack.clear()
    if chain:
        inner, frame = chain[-1]
        path = run.paths[id(inner)]
        f_locals = frame.f_locals
        # What the module was called with (before its own pre-hooks, as the user passed it).
        infos = call_inputs(f_locals.get("args", ()), f_locals.get("kwargs"))
    else:  # raised before any module ran (preparing the inputs)
        path = ""
        infos = call_inputs(args, kwargs)
    return ProbeError(
        path=path,
        cls=names.get(path, type(run.model).__name__),
        exc_type=_type_name(exc),
        message=_message(exc),
        input_shapes=tuple(i.shape for i in infos if isinstance(i, TensorInfo)),
        hint=_own_error(exc) or _hint(exc, run.mode, run.device),
    )


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _probe_file(filename: str) -> bool:
    """One of the probe's own files (probe.py, _probe_*.py): not the package's demo models, whose
    forwards are the model's code like any user's."""
    path = os.path.abspath(filename)
    name = os.path.basename(path)
    return path.startswith(_PACKAGE_DIR) and (name == "probe.py" or name.startswith("_probe_"))


def _call_out_codes() -> tuple[types.CodeType, ...]:
    """torchxray's frames that call the model or torch on the model's data: an exception raised
    there by a C function (an argument mismatch, an aten error) belongs to the model."""
    from ._probe_memo import Memo
    from ._probe_wrap import Patches

    return (
        RECORDED_CODE,
        inner_code(Patches._record_instance, "unbound"),
        inner_code(Memo._stub, "forward"),
        Memo._call.__code__,
        _execute.__code__,
        _prepare_inputs.__code__,
    )


def _own_error(exc: BaseException) -> str:
    """A hint for an exception raised by the probe's own code rather than by the model or torch (a
    bug, or a torch release it does not support); "" otherwise. RuntimeError and its subclasses
    (torch's shape, device and out-of-memory errors) are never counted as the probe's, so a bug of
    ours that surfaces as one still gets the ordinary hint. Errors torch raises in an operator end
    in torch's own frames (``OpOverload.__call__``), so the FLOP counter needs no exemption."""
    tb = exc.__traceback__
    if tb is None or isinstance(exc, RuntimeError):
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not _probe_file(code.co_filename):
        return ""
    if code in _call_out_codes():
        return ""
    where = f"{os.path.basename(code.co_filename)}:{tb.tb_lineno} ({code.co_name})"
    return (
        f"raised inside torchxray ({where}), not by the model: please report it with this "
        f"message and your torch version ({torch.__version__})"
    )


def _type_name(exc: BaseException) -> str:
    cls = type(exc)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _message(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    if _is_data_dependent(exc):
        text = f"fake tensors cannot run this data-dependent operation: {text}"
    return text if len(text) <= 2000 else text[:1997] + "..."


def _is_data_dependent(exc: BaseException) -> bool:
    from torch._subclasses import fake_tensor as ft

    kinds = (ft.DataDependentOutputException, ft.DynamicOutputShapeException)
    return isinstance(exc, kinds) or "data-dependent" in str(exc).lower()


def _hint(exc: BaseException, mode: str, device: torch.device) -> str:
    from torch._subclasses import fake_tensor as ft

    text = str(exc)
    if mode == "fake" and (
        _is_data_dependent(exc) or isinstance(exc, ft.UnsupportedOperatorException)
    ):
        return (
            "fake tensors carry no values, so operations whose result depends on them (nonzero, "
            ".item(), boolean-mask indexing, data-dependent routing) cannot run; probe with "
            "mode='real' on a model that holds real weights"
        )
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return "out of memory in this module; probe with mode='fake' (no memory) or smaller inputs"
    if device.type == "meta" and mode == "real":
        return "the model is on the meta device and holds no values; use mode='fake'"
    if isinstance(exc, TypeError) and ("argument" in text or "positional" in text):
        return "check the number and names of the example inputs against this forward's signature"
    lowered = text.lower()
    if "dtype" in lowered or "scalar type" in lowered:
        return "check the example inputs' dtypes: this module expects a different dtype"
    if "device" in lowered:
        return "inputs and parameters are on different devices inside this module"
    if any(word in lowered for word in ("shape", "size", "dim", "mat1", "match")):
        return "check the example inputs' shapes: they do not fit this module"
    return "check that the example inputs (shapes, dtypes, count) fit what this module expects"
