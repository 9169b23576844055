"""A `CompileReport` as the Compile tab shows it (``CompileState``, the ``compile`` traitlet):
plain data, each break with the class of the module's MRO whose source holds its line, so that
the Source tab can mark that line there.

    >>> state = compile_state(None, None, on=False, rev=0)
    >>> state["status"], state["breaks"], state["on"]
    ('none', [], False)
"""

from __future__ import annotations

import os

from torch import nn

from .._compile.records import CompileReport, ExportFailure, GraphBreak
from ..mro import mro_classes
from ..source import source
from .compile_types import BreakRow, CompileState, CompileStatus, ExportRow
from .highlight import holds

__all__ = ["break_paths", "compile_state", "source_class"]


def _same_file(a: str | None, b: str) -> bool:
    if not a or not b:
        return False
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


def source_class(module: nn.Module | None, file: str, line: int) -> str | None:
    """The qualname of the first class of ``module``'s MRO whose source holds ``file:line``
    (what the Source tab's ``cls`` takes), or None: the line is in a helper function, in torch's
    own code, or the class has no source."""
    if module is None or not file or line <= 0:
        return None
    for info, cls in zip(mro_classes(module), type(module).__mro__, strict=True):
        if cls is nn.Module or cls is object:
            break
        src = source(cls)
        if _same_file(src.file, file) and holds(src, line):
            return info.qualname
    return None


def _break_row(b: GraphBreak, module: nn.Module | None) -> BreakRow:
    return {
        "path": b.path,
        "cls": b.cls,
        "kind": b.kind,
        "reason": b.reason,
        "hint": b.hint,
        "url": b.url if b.url.startswith(("https://", "http://")) else "",
        "file": b.file,
        "line": b.line,
        "source": b.source,
        "src_cls": source_class(module, b.file, b.line),
    }


def _module(model: nn.Module | None, path: str) -> nn.Module | None:
    if model is None:
        return None
    try:
        return model.get_submodule(path)
    except AttributeError:  # the report is older than the model (patched meanwhile)
        return None


def _export_row(f: ExportFailure) -> ExportRow:
    return {"path": f.path, "cls": f.cls, "kind": f.kind, "reason": f.reason, "file": f.file,
            "line": f.line}  # fmt: skip


def compile_state(
    report: CompileReport | None,
    model: nn.Module | None,
    *,
    on: bool,
    rev: int,
    note: str = "",
    running: bool = False,
) -> CompileState:
    """The tab's state for ``report`` (None: not run yet; ``note`` then says why, when it could
    not run at all) on ``model``, whose modules the report's paths name; ``running``: a patch's
    re-check follows the probe running in the background."""
    if report is None or running:
        status: CompileStatus = "running" if running else "error" if note else "none"
        return {"status": status, "on": on, "mode": "", "breaks": [], "export": [],
                "export_ok": False, "error": "" if running else note, "notes": [], "modules": 0, "checked": 0,
                "wall_ms": 0.0, "rev": rev}  # fmt: skip
    if report.error is not None:
        status = "error"
    else:
        status = "breaks" if report.breaks else "ok"
    return {
        "status": status,
        "on": on,
        "mode": report.mode,
        "breaks": [_break_row(b, _module(model, b.path)) for b in report.breaks],
        "export": [_export_row(f) for f in report.export],
        "export_ok": report.export_ok,
        "error": report.error or "",
        "notes": list(report.notes),
        "modules": report.modules,
        "checked": report.checked,
        "wall_ms": round(report.wall_ms, 1),
        "rev": rev,
    }


def break_paths(report: CompileReport | None) -> frozenset[str]:
    """The modules whose own forward breaks (their rows get the "break" mark)."""
    if report is None or report.error is not None:
        return frozenset()
    return frozenset(b.path for b in report.breaks)
