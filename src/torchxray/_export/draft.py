"""Draft export, for the full list of data-dependent failures: `draft(model, args, kwargs, ...)`.

``torch.export.draft_export`` traces on real values where export alone stops at a branch on a
value: each such place is recorded and taken the way the example inputs take it, and tracing goes
on, so one run lists every one of them (several in one forward too, which the engine's
standing-in finds one at a time) and gives a program of the whole model, the branches taken as
the example takes them. It runs the forward on the real inputs, so a real check of a model in
eval mode uses it, once torch.export failed on a value. Each failure is placed by its user stack:
the module by the forward code its frames run (`_compile.owner.owner_of`), the line by the
innermost frame.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from torch import nn

from .._compile.export import kept_attributes
from .._compile.owner import owner_of
from .._compile.records import ExportFailure
from .._unwrap import original_class

__all__ = ["draft"]


@contextlib.contextmanager
def _trace_log_kept() -> Iterator[None]:
    """Draft export writes a structured trace of its run to a folder under the system's temp
    directory (or ``TORCH_TRACE``'s) and drops the handler a ``TORCH_TRACE`` run had on torch's
    trace logger. Here it writes to a folder of the check's own, removed after, and the logger's
    handlers and the variable are put back."""
    from torch._logging import _internal

    logger = _internal.trace_log
    handlers = list(logger.handlers)
    name = _internal.DTRACE_ENV_VAR
    before = os.environ.get(name)
    folder = tempfile.mkdtemp(prefix="torchxray-draft-")
    os.environ[name] = folder
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
        for h in list(logger.handlers):
            if h not in handlers:
                logger.removeHandler(h)
                h.close()
        for h in handlers:
            if h not in logger.handlers:
                logger.addHandler(h)
        shutil.rmtree(folder, ignore_errors=True)


def draft(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic_shapes: Any
) -> tuple[Any, list[ExportFailure]]:
    """(the draft program, its data-dependent failures); raises what draft export raises."""
    from torch.export._draft_export import FailureType, draft_export

    path_of = {id(m): p for p, m in model.named_modules()}
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        kept_attributes(model),
        _trace_log_kept(),
    ):
        program = draft_export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    report = program._report  # type: ignore[attr-defined]  # set by draft_export
    names: dict[int, str] = dict(getattr(report, "str_to_filename", {}) or {})
    out: list[ExportFailure] = []
    for failure in report.failures:
        if failure.failure_type != FailureType.DATA_DEPENDENT_ERROR:
            continue
        data = failure.data if isinstance(failure.data, dict) else {}
        frames = [
            SimpleNamespace(
                filename=names.get(f.get("filename"), str(f.get("filename"))),
                name=f.get("name", ""),
                lineno=int(f.get("line", 0) or 0),
            )
            for f in data.get("user_stack", [])
        ]
        if not frames:
            continue
        owner = owner_of(model, frames) or model
        last = frames[-1]
        expr = data.get("expr", "")
        reason = f"Could not guard on data-dependent expression {expr} (draft export took it as {data.get('result', '?')})"
        out.append(
            ExportFailure(
                path_of.get(id(owner), ""),
                original_class(type(owner)).__name__,
                "GuardOnDataDependentSymNode",
                reason,
                last.filename,
                last.lineno,
            )
        )
    return program, out
