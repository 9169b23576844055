"""Compile readiness: where ``torch.compile`` graph-breaks and ``torch.export`` fails, per module.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(4, 4)
    ...     def forward(self, x):
    ...         torch._dynamo.graph_break()  # e.g. a logging call torch cannot trace
    ...         return self.fc(x)
    >>> rep = tx.compile_check(nn.Sequential(nn.ReLU(), Net()), torch.randn(2, 4))
    >>> rep.ok, rep.breaks[0].path, rep.breaks[0].cls, rep.breaks[0].kind
    (False, '1', 'Net', 'Call to `torch._dynamo.graph_break()`')
    >>> len(rep["1"]), len(rep["0"]), rep.export  # torch.export ignores graph_break()
    (1, 0, ())

How: the model is probed once (`tx.probe`, fake tensors by default: nothing computed or allocated),
keeping each module's first call (`_compile.capture`). The whole model is then traced by dynamo
with a backend that raises as soon as it is handed a graph, under
``torch._dynamo.error_on_graph_break(True)``: tracing without running (`_compile.trace`), with
every block interchangeable with an earlier one (same class structure and arguments) standing in
as empty tensors of its recorded outputs (`_compile.stubs`), so 24 identical blocks cost one
block's trace. A break is owned by the innermost module whose own forward holds it (and by every
block of its kind); that module's children are checked on their own, it stands in for itself, and
the model is traced again, going on past the break (`_compile.check`). A model without a break
costs one trace. ``torch.export.export(..., strict=False)`` is tried on the same
captured call, each failure owned by the innermost module on its stack (`_compile.export`).

A ``torch.compile``'d model (its ``OptimizedModule``) is checked as the module it wraps.

``rep.ok`` means "no graph break": ``torch.compile`` would capture the whole forward in one graph.
``torch._dynamo.explain(model)(x).graph_break_count`` agrees on whether there is one, mostly: it
counts compiled graphs minus one, so a break before any op reads 0, and identical blocks share one
compiled frame (24 blocks that each print read 1 there, 24 here). Each module's own forward gives
its first break: tracing stops there, so a second break further down the same forward shows once
the first is fixed (breaks in its children and in the rest of its parents are all found). The user's compiled functions keep their caches: the check
compiles fresh functions of its own, never ``torch._dynamo.reset()`` (which ``explain`` calls), and
puts back dynamo's counters and automatic-dynamic records, its loggers and the compiler stance
(`_compile.guard`); the model keeps its hooks, flags and train/eval modes (the probe's guarantees,
`torchxray.probe`).

Fake inputs cannot take a value-dependent path: a ``.item()`` branch is a break found by tracing
alone, but the fake probe stops there, so modules the forward would call after it are traced only
inside their parents, up to that break (``rep.notes`` says so). ``options={"mode": "real"}`` probes
on real tensors where the model lives, so every module's call is recorded and checked (tracing
still runs on fake copies of what each call received and returned).

Options: the check's own settings travel in one ``options=`` dict, never as keyword arguments,
because a forward may itself take keywords named ``mode`` or ``export``: every other keyword is
the model's (``compile_check(model, x, mode="train")`` passes ``mode`` to the forward). A forward
that takes no keyword of that name gets none: ``compile_check(model, x, mode="real")`` raises a
TypeError that points at ``options={'mode': 'real'}``; one that takes ``**kwargs`` is handed it,
and ``rep.notes`` says where it went.
``options`` keys: ``"mode"`` ("fake", the default, or "real"), ``"export"`` (True, the default:
also try ``torch.export``; False skips it, the slower half).
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from torch import nn

from . import _gc
from ._compile.capture import capture
from ._compile.check import find_breaks
from ._compile.export import export_failures
from ._compile.guard import Quiet, unavailable
from ._compile.records import CompileReport, ExportFailure, GraphBreak
from ._signature import resolve
from ._text import closest
from ._unwrap import compiled_inner

__all__ = ["CompileReport", "ExportFailure", "GraphBreak", "compile_check"]

_OPTIONS = {"mode": ("fake", "real"), "export": (True, False)}


def _options(options: Any) -> tuple[str, bool]:
    if options is None:
        return "fake", True
    if not isinstance(options, dict):
        raise TypeError(
            f"compile_check(options=...) takes a dict such as {{'mode': 'real'}}, got {options!r}"
        )
    for key, value in options.items():
        if key not in _OPTIONS:
            near = closest(str(key), list(_OPTIONS))
            also = f" (did you mean {near[0]!r}?)" if near else ""
            raise TypeError(
                f"compile_check has no option {key!r}{also}; its options are {sorted(_OPTIONS)}"
            )
        if value not in _OPTIONS[key] or type(value) is not type(_OPTIONS[key][0]):
            raise ValueError(
                f"compile_check option {key!r} takes one of {_OPTIONS[key]}, got {value!r}"
            )
    return options.get("mode", "fake"), options.get("export", True)


def _stray_options(
    model: nn.Module,
    kwargs: dict[str, Any],
    names: tuple[str, ...] = tuple(_OPTIONS),
    check: str = "compile_check",
) -> list[str]:
    """The check's option names given as the model's keywords (``mode="real"``): a TypeError
    pointing at ``options=`` when the forward takes no such keyword (rather than the forward's
    own TypeError from deep inside the model); a note when only its ``**kwargs`` would take it,
    since the forward may use it or not, and the check then runs with its own default."""
    stray = [k for k in names if k in kwargs]
    if not stray:
        return []
    try:
        params = resolve(model.forward).parameters  # through wrappers
    except (TypeError, ValueError):  # no readable signature: the keywords go to the forward
        return []
    stray = [k for k in stray if k not in params]
    if not stray:
        return []
    given = ", ".join(f"{k}={kwargs[k]!r}" for k in stray)
    wanted = "{" + ", ".join(f"{k!r}: {kwargs[k]!r}" for k in stray) + "}"
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        raise TypeError(
            f"{type(model).__name__}.forward takes no keyword {stray[0]!r}: {check}'s own "
            f"settings go in options=, e.g. {check}(model, *args, options={wanted})"
        )
    return [
        f"{given} went to {type(model).__name__}.forward's **kwargs, as every keyword does; "
        f"the check's own settings go in options={wanted}"
    ]


def compile_check(
    model: nn.Module, *args: Any, options: dict[str, Any] | None = None, **kwargs: Any
) -> CompileReport:
    """Where ``torch.compile(model)`` would graph-break on ``model(*args, **kwargs)``, and where
    ``torch.export`` fails; a `CompileReport`. See the module docstring for how, and for
    ``options`` (kept apart from the model's own keyword arguments on purpose). Raises TypeError
    for a non-module, a bad option, or an option's name given as a keyword the forward does not
    take; everything that goes wrong in the model or in torch is a
    sentence in the report (``rep.error``, ``rep.notes``), never an exception.

    The model is traced, not run (on the fake probe's records by default); the user's compiled
    functions keep their caches (no ``torch._dynamo.reset()``), and the model keeps its hooks,
    flags and modes.

    Args:
        model: The model (a ``torch.compile``d one is checked as the module it wraps).
        *args: Example positional inputs.
        options: The check's own settings: ``"mode"`` (``"fake"``, the default, or ``"real"``:
            probe on real tensors, which sees past ``.item()`` and ``.numpy()``) and ``"export"``
            (True, the default: also try ``torch.export``; False skips that slower half).
        **kwargs: Example keyword inputs: every keyword is the model's, ``mode`` included.

    Returns:
        The `CompileReport`.

    Raises:
        TypeError: `model` is not an `nn.Module`, an option is unknown, or an option's name is
            given as a keyword the forward does not take.
        ValueError: An option has a value it does not take.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Branchy(nn.Module):
        ...     def forward(self, x):
        ...         if x.sum().item() > 0:  # a value decides the path: dynamo cannot trace it
        ...             return x
        ...         return -x
        >>> rep = tx.compile_check(nn.Sequential(nn.Linear(4, 4), Branchy()), torch.randn(2, 4))
        >>> rep.ok, [(b.path, b.cls, b.source) for b in rep.breaks]
        (False, [('1', 'Branchy', 'if x.sum().item() > 0:  # a value decides the path: dynamo cannot trace it')])
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"compile_check() needs a torch.nn.Module, got {type(model).__name__}; "
            "wrap a plain function in an nn.Module whose forward calls it"
        )
    mode, with_export = _options(options)
    start = time.perf_counter()
    # A torch.compile'd model is checked as the module it wraps: its paths are the user's, and
    # the wrapper's own compiled code is the user's cache, never run by the check.
    model = compiled_inner(model) or model
    stray = _stray_options(model, kwargs)

    def failed(error: str, modules: int = 0) -> CompileReport:
        wall = (time.perf_counter() - start) * 1e3
        return CompileReport(False, mode, (), (), False, error, (), 0, modules, wall)

    why = unavailable()
    if why is not None:
        return failed(f"the check cannot run: {why}")
    with _gc.paused():
        cap = capture(model, args, kwargs, mode)
    if id(model) not in cap.calls:
        refused = cap.report.error
        why = refused.message if refused is not None else "the probe recorded no call of it"
        return failed(f"the forward did not run: {why}")
    notes: list[str] = list(stray)
    if not cap.report.ok and cap.report.error is not None:
        err = cap.report.error
        notes.append(
            f"the {mode} probe stopped in {err.path or '(root)'} ({err.exc_type}); modules after it "
            "were traced only inside their parents"
            + (" (options={'mode': 'real'} runs every module)" if mode == "fake" else "")
        )
    with Quiet():
        found = find_breaks(model, cap)
        failures, export_notes = export_failures(model, cap) if with_export else ([], [])
    wall = (time.perf_counter() - start) * 1e3
    if found.root_error is not None:
        error = f"dynamo cannot trace this model at all: {found.root_error}"
        probed = cap.report.error
        if probed is not None:  # the forward itself fails on these inputs: that is the news
            error = (
                f"the forward fails on these inputs in {probed.path or '(root)'} ({probed.cls}): "
                f"{probed.exc_type}: {probed.message}"
            )
        return CompileReport(
            False, mode, (), (), False, error, tuple(notes), found.traced, len(cap.calls), wall
        )
    breaks = tuple(b for _, b in found.breaks)
    return CompileReport(
        ok=not breaks and not found.errors,
        mode=mode,
        breaks=breaks,
        export=tuple(failures),
        export_checked=with_export,
        error=None,
        notes=tuple(notes + found.errors + found.notes + export_notes),
        checked=found.traced,
        modules=len(cap.calls),
        wall_ms=wall,
    )
