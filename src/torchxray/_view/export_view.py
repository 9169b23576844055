"""An `ExportReport` as the Export tab shows it (``ExportState``, the ``export_state``
traitlet), and what changed between two reports (`changes`).

    >>> state = export_state(None, None, None, rev=0)
    >>> state["status"], state["issues"], state["stale"]
    ('none', [], False)
"""

from __future__ import annotations

from torch import nn

from .._export.records import NOT_DELEGATED, ExportIssue, ExportReport
from .compile_view import source_class
from .export_types import ExportIssueRow, ExportState, ExportStatus

__all__ = ["changes", "export_state"]


def _module(model: nn.Module | None, path: str) -> nn.Module | None:
    if model is None:
        return None
    try:
        return model.get_submodule(path)
    except AttributeError:  # the report is older than the model (patched meanwhile)
        return None


def _issue_row(i: ExportIssue, model: nn.Module | None) -> ExportIssueRow:
    return {"target": i.target, "path": i.path, "cls": i.cls, "op": i.op, "kind": i.kind,
            "reason": i.reason, "file": i.file, "line": i.line, "source": i.source,
            "count": i.count, "blocking": i.kind != NOT_DELEGATED,
            "src_cls": source_class(_module(model, i.path), i.file, i.line)}  # fmt: skip


def _key(i: ExportIssue) -> tuple[str, str, str, str]:
    return (i.target, i.path, i.op, i.kind)


def _said(i: ExportIssue) -> str:
    return f"[{i.target}] {i.path or '(model)'} ({i.cls}): {i.kind}: {i.op}"


def changes(old: ExportReport | None, new: ExportReport) -> list[str]:
    """What changed from `old` to `new`, one line each: targets whose status changed, issues
    gone and new, and modules whose drift moved tenfold or more (or appeared or went)."""
    if old is None or old.error is not None or new.error is not None:
        return []
    out: list[str] = []
    for name, t in new.targets.items():
        before = old.targets.get(name)
        if before is not None and before.status != t.status:
            out.append(f"{name}: {before.status} -> {t.status}")
    before_keys = {_key(i): i for i in old.failures}
    after_keys = {_key(i): i for i in new.failures}
    out += [f"fixed: {_said(i)}" for k, i in before_keys.items() if k not in after_keys]
    out += [f"new: {_said(i)}" for k, i in after_keys.items() if k not in before_keys]
    for path, d in new.drift.items():
        was = old.drift.get(path)
        if was is None:
            continue
        lo, hi = sorted((max(was.max_abs, 1e-12), max(d.max_abs, 1e-12)))
        if hi / lo >= 10 and hi > 1e-6:
            out.append(f"drift {path or '(model)'}: {was.max_abs:.2e} -> {d.max_abs:.2e}")
    if not out:
        out.append("nothing changed: the same targets, issues and drift as before")
    return out


def export_state(
    report: ExportReport | None,
    previous: ExportReport | None,
    model: nn.Module | None,
    *,
    rev: int,
    stale: bool = False,
    note: str = "",
    running: bool = False,
    asked: list[str] | None = None,
) -> ExportState:
    """The tab's state for ``report`` (None: not run yet; ``note`` says why when it could not
    run), compared with ``previous`` (the check before it, for ``changes``)."""
    if report is None or running:
        status: ExportStatus = "running" if running else "error" if note else "none"
        return {"status": status, "stale": False, "mode": "", "asked": list(asked or []),
                "targets": [], "issues": [], "rows": {}, "drift": {}, "changes": [],
                "error": note, "notes": [], "wall_ms": 0.0, "rev": rev}  # fmt: skip
    if report.error is not None:
        status = "error"
    else:
        status = "ok" if report.ok else "fails"
    return {
        "status": status,
        "stale": stale,
        "mode": report.mode,
        "asked": [t for t in report.targets],
        "targets": [
            {
                "target": t.target,
                "status": t.status,
                "message": t.message,
                "seconds": round(t.seconds, 3),
                "delegated": t.delegated,
                "portable": t.portable,
            }
            for t in report.targets.values()
        ],  # fmt: skip
        "issues": [_issue_row(i, model) for i in report.failures],
        "rows": {p: dict(s) for p, s in report.status.items()},
        "drift": {p: [d.max_abs, d.max_rel] for p, d in report.drift.items()},
        "changes": changes(previous, report),
        "error": report.error or "",
        "notes": list(report.notes),
        "wall_ms": round(report.wall_ms, 1),
        "rev": rev,
    }
