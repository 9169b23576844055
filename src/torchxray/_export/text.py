"""``print(rep)`` of an `ExportReport`: a plain-text table for a terminal or a log.

verdict line
target | status | seconds | what
module | class | one column per target | drift
issues, one a line; notes
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .records import NOT_DELEGATED

if TYPE_CHECKING:
    from .records import ExportReport

__all__ = ["report_text"]

MAX_ROWS = 40
_MARK = {
    "ok": "ok",
    "fails": "FAILS",
    "delegated": "delegated",
    "portable": "portable",
    "partly delegated": "partly",
    "not reached": "-",
    "not checked": "?",
}


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, row in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def report_text(rep: ExportReport) -> str:
    if rep.error is not None:
        return f"export check: {rep.error}"
    asked = list(rep.targets)
    blocking = [f for f in rep.failures if f.kind != NOT_DELEGATED]
    head = "every target takes the model" if rep.ok else f"{len(blocking)} issue(s)"
    lines = [f"export check ({rep.mode}): {head}", ""]
    rows = [["target", "status", "seconds", "what"]]
    for name, t in rep.targets.items():
        what = t.message
        if name == "executorch" and t.status == "ok":
            what = f"{t.delegated} op(s) delegated to XNNPACK, {t.portable} portable" + (
                f"; {what}" if what else ""
            )
        rows.append([name, t.status, f"{t.seconds:.2f}", what])
    lines += _table(rows)
    shown = [
        p
        for p in rep.modules
        if rep.status.get(p)
        and any(s not in ("ok", "not reached") for s in rep.status[p].values())
        or p in rep.drift
    ]
    if shown:
        lines.append("")
        cols = [t for t in asked if t in ("export", "onnx", "executorch", "aoti")]
        rows = [["module", "class", *cols, "drift (max abs)"]]
        for p in shown[:MAX_ROWS]:
            st = rep.status.get(p, {})
            d = rep.drift.get(p)
            rows.append(
                [p or "(root)", rep.modules[p], *(_MARK.get(st.get(c, ""), st.get(c, "")) for c in cols),
                 f"{d.max_abs:.2e}" if d is not None else ""]
            )  # fmt: skip
        lines += _table(rows)
        if len(shown) > MAX_ROWS:
            lines.append(f"... {len(shown) - MAX_ROWS} more module(s): rep[path] has each")
    hard = [f for f in rep.failures if f.kind != NOT_DELEGATED]
    if hard:
        lines += ["", "issues:"]
        lines += [f"  {f}" for f in hard]
    soft: dict[tuple[str, str], list[str]] = {}
    for f in rep.failures:
        if f.kind == NOT_DELEGATED:
            names = soft.setdefault((f.path, f.cls), [])
            names += [f.op.removeprefix("aten.").split(".")[0]] * f.count
    if soft:
        lines += ["", "left to ExecuTorch's portable kernels (not delegated to XNNPACK):"]
        for (path, cls), names in soft.items():
            kinds = ", ".join(dict.fromkeys(names))
            lines.append(f"  {path or '(root)'} ({cls}): {len(names)} op(s): {kinds}")
    lines += [f"note: {n}" for n in rep.notes]
    return "\n".join(lines)
