"""The probe's pane data: the header's summary (``ProbeSummary``) and the Probe table's pages
with the diff against the run before (``ProbeTableReply``), as JSON-able dicts in the shapes
``replies.py`` declares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from .._probe.records import classes_changed
from .._text import short
from .panes import MAX_TEXT, outputs_text, shape_text

if TYPE_CHECKING:
    from ..probe import ProbeReport
    from .replies import ProbeError, ProbeRow, ProbeSummary, ProbeTableReply

__all__ = ["probe_summary", "probe_table"]


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return short(text, limit, "…")


def probe_summary(
    report: ProbeReport | None, previous: ProbeReport | None, rev: int, why: str = ""
) -> ProbeSummary:
    if report is None:
        return {
            "ok": None,
            "mode": "",
            "status": why or "no probe yet",
            "count": 0,
            "error": None,
            "changed": 0,
            "rev": rev,
            "stale": False,
        }
    diff = _Diff(report, previous)
    changed = len(diff.changed) + len(diff.added) + len(diff.removed)
    error: ProbeError | None = None
    if report.error is not None:
        e = report.error
        error = {
            "path": e.path,
            "cls": e.cls,
            "exc_type": e.exc_type,
            "message": _clip(e.message, 1000),
            "hint": _clip(e.hint, 1000),
            "input_shapes": shape_text(e.input_shapes),
            "remedy": e.remedy,
        }
        where = e.path or "(model)"
        first = e.message.strip().splitlines()[0] if e.message.strip() else ""
        said = e.headline or f"{e.exc_type}: {first}"  # torch's words where there are no others
        status = _clip(f"probe failed at {where}: {said}", 300)
    else:
        status = f"probe ok: {len(report.records)} modules"
        if report.not_called:  # e.g. a fused fast path: say so, rather than leave rows blank
            status += f"; {len(report.not_called)} not called (reasons in the table)"
        if report.not_replayed:  # a fake probe slower than it could be: why, in its words
            status += f"; {_clip(report.not_replayed[0], 240)}"
    left = [w.label for w in report.writes if not w.restored]
    if left:  # a file written, a flag it could not set back: the probe left a trace, say which
        more = f" and {len(left) - 3} more" if len(left) > 3 else ""
        said = f"the forward wrote what torchxray could not put back: {', '.join(left[:3])}{more}"
        status = _clip(f"{status}; {said}", 400)
    if why:  # probing again, or cancelled: the report shown is the one before
        status = _clip(f"{why.rstrip('.')}. Shown: the run before ({status})", 400)
    return {
        "ok": report.ok,
        "mode": report.mode,
        "status": status,
        "count": len(report.records),
        "error": error,
        "changed": changed,
        "rev": rev,
        "stale": bool(why),
    }


class _Diff:
    """The previous probe against this one, as the Probe pane shows it: output shapes or the class
    changed (a replace that keeps shapes is still a change), added, removed; after a failed probe
    the modules it no longer reached are "not reached", not "removed"."""

    def __init__(self, report: ProbeReport, previous: ProbeReport | None) -> None:
        self.changed: dict[str, str] = {}
        self.added: set[str] = set()
        self.removed: list[str] = []
        self.not_reached: list[str] = []
        if previous is None:
            return
        d = previous.diff(report)
        # A failed previous run stopped early: what it did not reach is not new (nothing passed
        # before it to tell what is).
        self.added = {e.path for e in d.added} if previous.ok else set()
        gone = [e.path for e in d.removed]
        if report.ok:
            self.removed = gone
        else:
            self.not_reached = gone
        shapes_differ = {e.path for e in d.changed}
        now, then = report.records, previous.records
        new = {e.path for e in d.added}
        both = [p for p in now if p not in new]
        retyped = classes_changed(then, now, both)
        for path in both:  # the records themselves are made only for the paths that changed
            if path not in shapes_differ and path not in retyped:
                continue
            old, rec = then[path], now[path]
            # Same format as the "output" column, so before and now compare at a glance.
            before = shape_text(old.output_shapes) if old.output_shapes else "—"
            if old.cls != rec.cls:
                before += f" (was {old.cls})"
            self.changed[path] = before


def _outermost(paths: Sequence[str]) -> list[str]:
    """The paths whose parent is not among them (``blocks.1`` stands for ``blocks.1.0.conv``)."""
    among = set(paths)
    return [p for p in paths if p.rpartition(".")[0] not in among]


def probe_table(
    report: ProbeReport, previous: ProbeReport | None, offset: int, limit: int, rev: int
) -> ProbeTableReply:
    diff = _Diff(report, previous)
    failed = report.error.path if report.error is not None else None
    paths = list(report.records)  # records are made when read: read only this page's
    limit = min(max(limit, 1), 2000)
    rows: list[ProbeRow] = []
    for rec in (report.records[path] for path in paths[offset : offset + limit]):
        status: Literal["same", "changed", "added", "failed"] = "same"
        if rec.path == failed:
            status = "failed"
        elif rec.path in diff.changed:
            status = "changed"
        elif rec.path in diff.added:
            status = "added"
        rows.append(
            {
                "path": rec.path,
                "cls": rec.cls,
                "calls": rec.calls,
                "inputs": shape_text(rec.input_shapes),
                "outputs": outputs_text(rec.outputs),
                "status": status,
                "before": diff.changed.get(rec.path),
                "flops": rec.flops,
                "time_ms": rec.time_ms,
                "mem_peak": rec.mem_peak,
            }
        )
    return {
        "kind": "probe_table",
        "rows": rows,
        "total": len(paths),
        "removed": diff.removed[:100],
        "not_reached": _outermost(diff.not_reached)[:100],
        "not_reached_total": len(diff.not_reached),
        "not_called": dict(list(report.not_called.items())[:200]),
        "rev": rev,
    }
