"""Export readiness: every op that torch.export, ONNX and ExecuTorch cannot take, on its module and
line, and how far each module's numbers drift in onnxruntime.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> class Sorted(nn.Module):
    ...     def forward(self, x):
    ...         return torch.cummax(x, 0)[0]  # no ONNX translation
    >>> model = nn.Sequential(nn.Linear(4, 4), Sorted()).eval()
    >>> rep = tx.export_check(model, torch.randn(2, 4))
    >>> rep.ok, rep.targets["export"].ok, rep.targets["onnx"].status
    (False, True, 'fails')
    >>> issue = rep.failures[0]
    >>> issue.target, issue.path, issue.cls, issue.op, issue.kind
    ('onnx', '1', 'Sorted', 'aten.cummax.default', 'no ONNX translation')
    >>> rep["1"].ok, rep["0"].ok, rep[""].ok
    (False, True, False)

How: the model is probed once (`tx.probe`, as `tx.compile_check` does, on the same engine:
`_compile.capture`), then exported with ``torch.export.export(..., strict=False)`` by the compile
check's export engine (`_compile.export.export_run`): the whole model first, and where that
fails, every failing module found by standing it in for itself with its recorded output and
exporting again, so that one call lists every failure, not the first (`compile_check`'s
``rep.export`` is that engine's list too). What torch.export made is then handed to each target:

- ``"onnx"``: the dynamo ONNX exporter's decomposition and the dispatch of every node against
  its registry (`_export.onnx`), the list ``torch.onnx.export(..., report=True)`` writes, each op
  on its module and line; where nothing is missing, the ONNX model (``rep.targets["onnx"].program``,
  an ``ONNXProgram``), and, on real weights, each module's drift in onnxruntime (`_export.drift`);
- ``"executorch"``: lowering with the XNNPACK partitioner, delegated and portable ops per module,
  ops outside the Core ATen set (`_export.executorch`);
- ``"aoti"``: AOTInductor's compile of the program into a temporary package (a C++ compiler's
  work: seconds to minutes, so never a default; `_export.aoti`).

A target whose package is not installed reads "not installed: pip install torchxray[export]".
``torch.export`` is every target's first stage, so ``rep.targets`` always has ``"export"``.

Options (the check's own settings travel in ``options=``; every other keyword is the forward's,
as in `compile_check`): ``"targets"`` (a tuple of "export", "onnx", "executorch", "aoti";
default ("export", "onnx")), ``"dynamic_shapes"`` (handed to ``torch.export.export``),
``"mode"`` ("fake": nothing computed, the probe on fake tensors, no drift; "real": the probe and
the drift computed; default: "real" where every parameter, buffer and input is a real tensor,
"fake" where one is on the meta device), ``"drift"`` (True: measured where it can be).

Left as found: the model (its weights, modes, hooks and classes), torch's dynamo, export, fx and
inductor settings (`_export.guard`), dynamo's counters and caches (`_compile.guard`), and the
loggers the targets use. Drift is measured in eval mode only: a model in training mode would
change its batch-norm statistics in the eager run (``rep.notes`` says so).
"""

from __future__ import annotations

import time
from typing import Any

from torch import nn

from . import _gc
from ._compile.capture import capture
from ._compile.export import export_run
from ._compile.guard import Quiet, unavailable
from ._compile.plan import plan
from ._compile.records import ExportFailure
from ._export.assemble import export_issue, statuses
from ._export.draft import draft
from ._export.drift import drift, onnxruntime_missing
from ._export.guard import Untouched
from ._export.options import Options, parse_options
from ._export.records import (
    DATA_DEPENDENT,
    NOT_DELEGATED,
    TARGETS,
    Drift,
    ExportIssue,
    ExportReport,
    ModuleExport,
    TargetResult,
)
from ._export.shapes import is_constraint, specialised
from ._export.targets import RUNNERS, Stage
from ._unwrap import compiled_inner, original_class
from .compile import _stray_options

__all__ = ["Drift", "ExportIssue", "ExportReport", "ModuleExport", "TargetResult", "export_check"]


def _cls(module: nn.Module) -> str:
    return original_class(type(module)).__name__


def _explain(model: nn.Module, path_of: dict[int, str]) -> Any:
    def explain(exc: BaseException) -> list[ExportFailure]:
        if not is_constraint(exc):
            return []
        reason = " ".join(str(exc).strip().splitlines()[:2])
        sites = specialised(exc, model)
        if not sites:
            return [ExportFailure("", _cls(model), "ConstraintViolation", reason, "", 0)]
        return [
            ExportFailure(path_of[id(m)], _cls(m), f"specialised: {expr}", reason, file, line)
            for m, file, line, expr in sites
        ]

    return explain


def _values_only(probed: Any, mode: str) -> bool:
    """Whether a probe's failure is only fake tensors' lack of values (a branch on a value):
    torch.export meets it too and reports it on its module; any other is the forward's own."""
    text = f"{probed.exc_type} {probed.message}"
    return mode == "fake" and ("DataDependent" in text or "data-dependent" in text)


def _not_run(name: str, why: str) -> TargetResult:
    return TargetResult(name, "not checked", why)


def export_check(
    model: nn.Module, *args: Any, options: dict[str, Any] | None = None, **kwargs: Any
) -> ExportReport:
    """Which of the model's ops torch.export, ONNX, ExecuTorch and AOTInductor cannot take on
    ``model(*args, **kwargs)``, each on its innermost module and the user's line, and each
    module's drift in onnxruntime; an `ExportReport`. See the module docstring for how and for
    ``options``. Raises TypeError / ValueError for a non-module or a bad option (one sentence);
    whatever goes wrong in the model or in torch is a sentence in the report (``rep.error``,
    ``rep.notes``), never an exception.

    The model is left as found: its weights, modes, hooks and classes, and torch's export, fx,
    dynamo and inductor settings. A target whose package is missing reads ``"not installed"``
    in the report (``pip install torchxray[export]``).

    Args:
        model: The model (a ``torch.compile``d one is checked as the module it wraps).
        *args: Example positional inputs.
        options: The check's own settings: ``"targets"`` (a tuple of ``"export"``, ``"onnx"``,
            ``"executorch"``, ``"aoti"``; default ``("export", "onnx")``; ``"export"`` is always
            checked, every target's first stage), ``"dynamic_shapes"`` (handed to
            ``torch.export.export``), ``"mode"`` (``"real"``, the default on real weights: the
            forward runs and drift is measured; ``"fake"``, the default when a weight or input
            is on the meta device: nothing computed) and ``"drift"`` (True, the default:
            measured where it can be).
        **kwargs: Example keyword inputs: every keyword is the model's.

    Returns:
        The `ExportReport`.

    Raises:
        TypeError: `model` is not an `nn.Module`, `options` is not a dict or names an option
            that does not exist, or an option's name (``targets=``, ``dynamic_shapes=``,
            ``drift=``) is given as a keyword the forward does not take.
        ValueError: An option has a value it does not take (an unknown target, a mode other
            than ``"real"`` / ``"fake"``, ``"real"`` on the meta device).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
        >>> x = torch.randn(3, 4)
        >>> rep = tx.export_check(model, x)
        >>> rep.ok, list(rep.targets), rep.failures, rep.drift[""].max_abs < 1e-5
        (True, ['export', 'onnx'], (), True)
        >>> tx.export_check(model, x, options={"targets": ("export", "tflite")})
        Traceback (most recent call last):
        ...
        ValueError: unknown export target 'tflite'; the targets are ('export', 'onnx', 'executorch', 'aoti')
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"export_check() needs a torch.nn.Module, got {type(model).__name__}; "
            "wrap a plain function in an nn.Module whose forward calls it"
        )
    model = compiled_inner(model) or model
    opts = parse_options(options, model, args, kwargs)
    stray = _stray_options(model, kwargs, ("targets", "dynamic_shapes", "drift"), "export_check")
    start = time.perf_counter()
    named = list(model.named_modules())
    path_of = {id(m): p for p, m in named}

    def failed(error: str) -> ExportReport:
        wall = (time.perf_counter() - start) * 1e3
        return ExportReport(False, opts.mode, {}, (), {}, error, tuple(stray), {}, {}, wall)

    why = unavailable()
    if why is not None:
        return failed(f"the check cannot run: {why}")
    with _gc.paused():
        cap = capture(model, args, kwargs, opts.mode)
    probed = cap.report.error
    if id(model) not in cap.calls or probed is not None and not _values_only(probed, opts.mode):
        if probed is not None:
            return failed(
                f"the forward fails on these inputs in {probed.path or '(root)'} ({probed.cls}): "
                f"{probed.exc_type}: {probed.message}"
            )
        return failed("the forward did not run on these inputs: the probe recorded no call of it")
    if probed is not None:  # a fake probe stopped at a value: export sees the same, and says so
        stray = [*stray, f"the fake probe stopped in {probed.path or '(root)'} at an op that needs "
                 "tensor values; export is traced on its own (options={'mode': 'real'} goes on past it)"]  # fmt: skip
    modules = {p: _cls(m) for p, m in named if id(m) in cap.calls}
    try:
        with Quiet(), Untouched():
            report = _check(model, args, kwargs, opts, cap, path_of, modules, stray)
    except Exception as exc:  # noqa: BLE001 - the check's own failure, said as such
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return failed(
            f"the export check itself failed ({type(exc).__name__}: {text[:300]}); this is "
            "torchxray's failure, not the model's: please report it"
        )
    wall = (time.perf_counter() - start) * 1e3
    return ExportReport(**{**report, "wall_ms": wall})


def _check(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    opts: Options,
    cap: Any,
    path_of: dict[int, str],
    modules: dict[str, str],
    notes: list[str],
) -> dict[str, Any]:
    targets: dict[str, TargetResult] = {}
    issues: list[ExportIssue] = []
    unchecked: dict[str, list[str]] = {}
    drifts: dict[str, Drift] = {}
    t0 = time.perf_counter()
    # A real check builds the programs (the ONNX model runs for drift): the model is exported
    # whole. A fake one (a model on the meta device) lets interchangeable blocks stand in for
    # themselves from the start, 80 decoder layers exported as one, their issues copied.
    whole = opts.mode == "real"
    run = export_run(
        model, cap, whole=whole, traces=True, dynamic_shapes=opts.dynamic_shapes,
        inputs=(args, kwargs) if opts.mode == "real" else None, explain=_explain(model, path_of),
    )  # fmt: skip
    notes = [*notes, *run.notes]
    export_issues = [export_issue(f) for f in run.failures]
    issues += export_issues
    blind = list(run.failed)
    targets["export"] = TargetResult(
        "export",
        "fails" if export_issues else "ok",
        f"{len(export_issues)} failure(s)" if export_issues else "",
        time.perf_counter() - t0,
        run.program if not export_issues else None,
    )
    if opts.dynamic_shapes is not None and len(run.failures) > 1:
        notes.append("with dynamic_shapes, what follows the first failure was exported with the "
                     "failing module's output at the example's shapes")  # fmt: skip
    program = run.program
    stage = Stage(
        program, list(run.stood), list(run.failed),
        _copies(model, cap, run.stood, run.failed) if program is not None else {},
        modules, exported=not export_issues,
    )  # fmt: skip
    if any(i.kind == DATA_DEPENDENT for i in export_issues) and opts.mode == "real":
        drafted = _drafted(model, args, kwargs, opts, export_issues, notes)
        if drafted is not None:
            program, more = drafted
            issues += more
            export_issues += more
            blind = []
            n = len(export_issues)
            targets["export"] = TargetResult("export", "fails", f"{n} failure(s)",
                                             time.perf_counter() - t0)  # fmt: skip
            stage = Stage(program, [], [], {}, modules, exported=False)
    for name in opts.targets:
        if name == "export":
            continue
        if program is None:
            targets[name] = _not_run(name, "torch.export fails first (see its issues)")
            continue
        result, found = RUNNERS[name](stage)
        targets[name], unchecked[name] = result, blind
        issues += found
        if name == "onnx" and result.program is not None:
            drifts, why_not = _drift(model, args, kwargs, opts, stage.decomposed, result.program)
            if why_not:
                notes.append(why_not)
    counts = stage.counts
    blocking = [i for i in issues if i.kind != NOT_DELEGATED]
    order = {name: n for n, name in enumerate(TARGETS)}
    issues.sort(key=lambda i: order.get(i.target, 9))
    ok = not blocking and all(targets[n].ok for n in targets)
    return {
        "ok": ok,
        "mode": opts.mode,
        "targets": targets,
        "failures": tuple(issues),
        "drift": drifts,
        "error": None,
        "notes": tuple(notes),
        "modules": modules,
        "status": statuses(modules, targets, issues, unchecked, counts),
    }


def _drafted(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    opts: Options,
    found: list[ExportIssue],
    notes: list[str],
) -> tuple[Any, list[ExportIssue]] | None:
    """Draft export's program of the whole model and the data-dependent failures the engine did
    not find (`_export.draft`); None (and a note) where it cannot run."""
    if any(m.training for m in model.modules()):
        notes.append("draft export (every data-dependent failure, and the ops after them) runs "
                     "the forward on its inputs: in eval mode only, as the model is in training mode")  # fmt: skip
        return None
    try:
        program, failures = draft(model, args, kwargs, opts.dynamic_shapes)
    except Exception as exc:  # noqa: BLE001 - the engine's list stands; said why
        notes.append(f"draft export could not run: {type(exc).__name__}: {str(exc).strip()[:200]}")
        return None
    seen = {(i.file, i.line) for i in found}
    more = [export_issue(f) for f in failures if (f.file, f.line) not in seen]
    notes.append("the ONNX and ExecuTorch ops were read from draft export's program, which takes "
                 "each data-dependent branch the way the example inputs do")  # fmt: skip
    return program, more


def _copies(
    model: nn.Module, cap: Any, stood: list[str], failed: list[str]
) -> dict[str, list[str]]:
    """First member of a group -> its members that stood in for themselves (not for a failure
    of their own): their ops are the first member's."""
    if not stood:
        return {}
    copies = set(stood) - set(failed)
    out: dict[str, list[str]] = {}
    for group in plan(model, cap.calls):
        others = [p for p, _ in group.members[1:] if p in copies]
        if others and group.path not in copies:
            out[group.path] = others
    return out


def _drift(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    opts: Options,
    decomposed: Any,
    built: Any,
) -> tuple[dict[str, Drift], str]:
    if not opts.drift:
        return {}, ""
    if opts.mode != "real":
        return (
            {},
            "drift is measured on real weights and inputs: options={'mode': 'real'} measures it",
        )
    if onnxruntime_missing():
        return {}, "drift needs onnxruntime: pip install torchxray[export]"
    if any(m.training for m in model.modules()):
        return (
            {},
            "drift is measured in eval mode only (a training-mode forward changes batch-norm statistics and draws dropout): call model.eval() first",
        )
    try:
        return drift(model, args, kwargs, decomposed, built), ""
    except Exception as exc:  # noqa: BLE001 - onnxruntime or the model failed: said
        return (
            {},
            f"drift could not be measured: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
        )
