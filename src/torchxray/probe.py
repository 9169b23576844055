"""Shape probe: run a model once and record what every module received and returned.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> rep = tx.probe(model, torch.randn(3, 4))  # fake tensors: no memory used, nothing computed
    >>> rep["2"].input_shapes, rep["2"].output_shapes, rep["0"].flops
    (((3, 8),), ((3, 2),), 192)

``mode="fake"`` runs the forward on fake tensors (``FakeTensorMode``) over the model's own
parameters, which are viewed, never copied: it works for CPU, CUDA and meta models of any size.
``mode="real"`` runs on real tensors where the model lives and measures per-module time (and CUDA
memory). It counts no FLOPs unless asked (``flops=True``): counting intercepts every op in Python,
which would slow the forward and inflate the times it measures; fake mode counts
them at no cost to anything. Either way the inputs are moved to the model's device and the model
never is.

A module's record is what its forward received and returned: after its own forward pre-hooks,
before its forward hooks (which still run as usual). Calls through the module (``module(x)``) are
recorded; a direct ``module.forward(x)`` call in general is not, as with hooks. The probe adds no
hook to anything: `_probe.wrap` says how it reaches every call instead.

The forward runs as the user's own call would, each module in its own train/eval mode (a
train-mode detector given targets returns its losses), with gradients off. Afterwards every
buffer holds what it held before (BatchNorm's running statistics and ``num_batches_tracked``
included), the RNG state is what it was (dropout drew from a fork of it), each module's flag is
restored, whatever the probe replaced to record calls is put back, no tensor of the run stays
allocated and, after a GPU probe, the CUDA cache is emptied. This holds after an exception too.
Reading what a module received or returned is torchxray's own work and never fails the forward:
a value it cannot open is kept as a placeholder and named in ``rep.limitations``. Exceptions from
the forward (CUDA out-of-memory included) become a failed report
(``rep.ok`` False, ``rep.error`` naming the innermost module that raised); KeyboardInterrupt is
re-raised after the clean-up.

Fake mode runs a block whose structure and input metadata it has seen before only once and copies
the records (``rep.memoised`` lists the skipped paths): 80 identical decoder layers cost one.
Where alike sibling blocks were all run, ``rep.not_replayed`` says why in a sentence per group
(hooks of their own, an attribute holding a different object in each, ...). Fake
tensors a forward caches on its modules are removed afterwards. Models with uninitialised lazy
modules are refused (a failed report), since running them would initialise them.

Each record lists where its module was called from (``rep[path].sites``: file, line, the
caller's function and source line, with a count per distinct line), and ``rep.flow`` lists every
call in the order it began, nested as it ran (path, call index, depth, parent): one frame lookup a
call, kept as the caller's code and line number, never its frame. A fake probe also gives
``rep.edges``: module A's output received by module B, with its shape and the functional ops in
between, followed by tensor identity (`_probe.edges`); a real probe gives none. Where a forward
is annotated (``Tensor``, ``tuple``, ``Optional``..., jaxtyping's ``Float[Tensor, "b c h w"]``),
``rep[path].contract`` lists where a call disagreed with it (`_probe.contracts`).

Records are made when first read (``rep.records`` is a mapping that builds each record on first
access); the report holds metadata only, never a tensor or the model.

Inputs are passed as the model takes them: ``probe(model, x)``, ``probe(model, **batch)`` for a
tokenizer's ``BatchEncoding`` or a dict of tensors, and ``probe(model, batch)`` too when the
batch is the only input, its keys all name the forward's parameters (or the forward takes
``**kwargs`` and its first parameter is a key), and that first parameter is not annotated as a
mapping: the batch is then opened into keyword arguments, as ``model(**batch)``. A forward that
takes the mapping itself (``forward(self, batch: dict)``) gets it as it is. Outputs keep their
names: a transformers ``ModelOutput`` gives "logits", its cache "past_key_values[0].keys" (the
field's own name; ``cache`` in transformers 5).

A submodule its parent never called has no record; ``rep.not_called`` maps the outermost such
paths of a successful run to the reason when it is known (the fused fast path of
``nn.TransformerEncoderLayer``, ``nn.MultiheadAttention``'s ``out_proj``), and
``rep.why_not_called(path)`` answers for any path under them. A ``torch.compile``d model or a
module compiled in place runs eagerly during a probe (``torch.compiler.set_stance("force_eager")``,
torch >= 2.6): compiled code calls no module, so nothing inside it could be recorded, and compiling
the probe's recording functions took seconds and recompiled on every probe. Times of a real probe
are therefore the eager forward's.

After a patch, ``patch_log=`` (a `torchxray.PatchLog` or its entries; the Explorer passes its own)
lets a failure's hint name the patch it follows ("conv1 was edited to out_channels=64 (was 96);
bn1 receives its output (1x64x8x8) and still has num_features=96 ...") instead of the example
inputs.

Note: ``mode``, ``flops`` and ``patch_log`` are taken by the probe, so a model whose forward has
an argument of one of those names cannot get it through ``probe``'s keyword arguments.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
from typing import Any

import torch
from torch import nn

from . import _gc
from ._fake.unreplayed import unreplayed
from ._probe import fastpath
from ._probe.calls import Call
from ._probe.cause import entries_of
from ._probe.edges import Edge, Edges
from ._probe.failure import localise
from ._probe.flow import Flow, FlowEntry
from ._probe.inputs import first_lazy, model_device, prepare_inputs, unpack_batch
from ._probe.records import (
    CallRecord,
    DiffEntry,
    LazyRecords,
    ModuleRecord,
    ProbeDiff,
    ProbeError,
    ProbeReport,
    TensorInfo,
)
from ._probe.run import ProbeRun
from ._probe.sites import Site, sites_of
from ._probe.skipped import NotCalled
from ._trace.report import unrestored
from ._trace.writes import Write

__all__ = [
    "CallRecord",
    "DiffEntry",
    "Edge",
    "FlowEntry",
    "ModuleRecord",
    "ProbeDiff",
    "ProbeError",
    "ProbeReport",
    "Site",
    "TensorInfo",
    "Write",
    "probe",
]

_MODES = ("fake", "real")


def probe(
    model: nn.Module,
    *args: Any,
    mode: str = "fake",
    flops: bool | None = None,
    patch_log: Any = None,
    **kwargs: Any,
) -> ProbeReport:
    """Run ``model(*args, **kwargs)`` once, recording every module call; return a `ProbeReport`.

    ``flops``: count FLOPs per module (default: in fake mode yes, in real mode no; see above).
    ``patch_log``: the `PatchLog` (or its entries) of the patches applied to `model`, so that a
    failure's hint names the patch it follows. A single mapping as the only input (a
    ``BatchEncoding``) is opened into keyword arguments when the forward takes its keys (see
    above). Raises TypeError for a non-module and ValueError for an unknown mode; everything that
    goes wrong *inside* the forward (wrong input shape, dtype or count included) gives a failed
    report.

    The model is never moved or changed: inputs go to the model's device, each module runs in its
    own train/eval mode with gradients off, and buffers, the RNG, hooks and whatever the forward
    wrote are put back afterwards (``rep.writes`` says what that was), even on error.

    Args:
        model: The model to run.
        *args: Its positional inputs, as ``model(*args, **kwargs)`` takes them.
        mode: ``"fake"`` (shapes and FLOPs on fake tensors: no memory, nothing computed) or
            ``"real"`` (runs for real where the model lives: time per module, CUDA memory, and
            the first module that returned NaN/Inf).
        flops: Count FLOPs per module; default True in fake mode, False in real mode (counting
            slows a real forward and would inflate its times).
        patch_log: The `PatchLog` (or its entries) of the patches applied to `model`, so that a
            failure's hint names the patch it follows.
        **kwargs: Its keyword inputs (a tokenizer's batch: ``probe(model, **batch)``).

    Returns:
        The `ProbeReport`: a record per module that ran, or, if the forward raised, `ok` False and
        `error` naming the innermost module that raised.

    Raises:
        TypeError: `model` is not an `nn.Module`.
        ValueError: `mode` is neither ``"fake"`` nor ``"real"``.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(16))
        >>> rep = tx.probe(model, torch.randn(1, 3, 8, 8))
        >>> rep.ok, rep["0"].output_shapes
        (False, ((1, 8, 6, 6),))
        >>> rep.error.path, rep.error.cls
        ('1', 'BatchNorm2d')
        >>> tx.probe(model[:1], torch.randn(1, 3, 8, 8), mode="real")["0"].time_ms > 0
        True
    """
    return run_probe(model, args, kwargs, mode=mode, flops=flops, patch_log=patch_log)


def run_probe(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    mode: str = "fake",
    memoise: bool = True,
    flops: bool | None = None,
    patch_log: Any = None,
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
    patches = entries_of(patch_log)
    args, kwargs = unpack_batch(model, args, kwargs)
    # The collector resumes with what the probe built counted as old (``_gc.resume``): resuming
    # it plainly ran a young collection through every record at once, 250 ms of a 100,000-module
    # probe's 1.4 s and more than linear in modules (bench/README.md, "Issue 55").
    with _gc.paused(as_old=True):
        report = _run(model, args, kwargs, mode, memoise, flops, patches)
        if not report.ok and mode == "fake" and fastpath.enabled():
            report = fastpath.localised(
                report, lambda: _run(model, args, kwargs, mode, memoise, flops, patches)
            )
        return report


def _run(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    mode: str,
    memoise: bool,
    flops: bool,
    patches: tuple[Any, ...] = (),
) -> ProbeReport:
    device = model_device(model)
    run = ProbeRun(model, mode, device, memoise, flops)
    names = run.names
    start = time.perf_counter()
    failed = True  # also when _execute raises (KeyboardInterrupt)
    try:
        error = _execute(run, args, kwargs, names, patches)
        failed = error is not None
    finally:
        if device.type == "cuda":
            if failed:
                # Tracebacks and cycles can hold a failed run's activations. A successful run's
                # are released when _execute returns, and a full collection costs more than a
                # small model's whole forward on the GPU.
                gc.collect()
            torch.cuda.empty_cache()  # the run's cached blocks go back to the device
    wall_ms = (time.perf_counter() - start) * 1e3

    def build(path: str, calls: list[Call]) -> ModuleRecord:
        made = tuple(call.record(flops) for call in calls)
        contract = tuple(dict.fromkeys(m for call in calls for m in call.contract))
        return ModuleRecord.from_calls(path, names.get(path, "?"), made, sites_of(calls), contract)

    writes = tuple(run.trace.writes) if run.trace is not None else ()
    # The builder holds the calls and the names, nothing of `run`: a report keeps no model alive.
    records = LazyRecords(run.log, build, names)
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
        nonfinite=None if (bad := run.recorder.nonfinite.found) is None else records[bad.path],
        not_called=NotCalled(names, lambda: records) if error is None else {},
        flow=Flow(run.log),
        edges=Edges(run.log, produced.raw) if (produced := run.recorder.produced) else (),
        returns=Edges(run.log, produced.raw, returned=True) if produced else (),
        limitations=tuple(run.recorder.limits),
        notes=unrestored(writes),
        writes=writes,
        not_replayed=(
            unreplayed(run.memo, run.modules, run.paths, records.__contains__)
            if run.memo is not None and error is None
            else ()
        ),
    )


def _execute(
    run: ProbeRun,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    names: dict[str, str],
    patches: tuple[Any, ...],
) -> ProbeError | None:
    # A function of its own so that inputs and outputs are released when it returns.
    lazy = first_lazy(run)
    if lazy is not None:
        return lazy
    with _eager(), run:
        try:
            args, kwargs = prepare_inputs(run, args, kwargs)
            run.model(*args, **kwargs)
        except Exception as exc:
            bare = lambda: _bare_runs(run, args, kwargs)  # noqa: E731
            return localise(run, exc, names, args, kwargs, _execute.__code__, patches, bare)
    return None


def _bare_runs(run: ProbeRun, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the model's forward runs with the recording taken off (still inside the run: its
    fake mode, its state kept and put back, its writes undone)."""
    run.patches.undo()
    try:
        run.model(*args, **kwargs)
    except Exception:  # noqa: BLE001 - it fails bare too: the failure is the model's or inputs'
        return False
    return True


def _eager() -> contextlib.AbstractContextManager[Any]:
    """Compiled modules run eagerly for the probe (see the module docstring); torch < 2.6 has no
    stance to set, and compiles as before. Nothing was compiled while ``torch._dynamo`` is not
    imported (``torch.compile`` imports it), and importing it for the stance took seconds."""
    set_stance = getattr(getattr(torch, "compiler", None), "set_stance", None)
    if set_stance is None or "torch._dynamo" not in sys.modules:
        return contextlib.nullcontext()
    return set_stance("force_eager")  # type: ignore[no-any-return]
