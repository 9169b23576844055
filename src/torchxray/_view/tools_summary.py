"""The Probe tab's summary request (listed in ``_view/handlers.py``): the text ``ex.summary(depth)``
returns, for the Copy button, and the same rows as CSV, for the download.

The CSV lists every module down to the depth one line each (no folded runs: it is data for a
spreadsheet or pandas); past `MAX_ROWS` lines the request is refused with what to do instead, so
that a reply never carries a 100,000-module table through the comm.
"""

from __future__ import annotations

from ..summary import summarize
from .host import NONE, Host, States
from .summary_types import SummaryReply, SummaryRequest

__all__ = ["MAX_ROWS", "on_summary"]

MAX_ROWS = 20_000

NO_PROBE = "no probe (no example inputs: tx.explore(model, x) probes)"


def on_summary(host: Host, req: SummaryRequest) -> tuple[SummaryReply, States]:
    tree, report = host.tree, host.report
    shown = summarize(
        tree,
        report,
        depth=req["depth"],
        note=host.probe_note or NO_PROBE,
        compile_report=host.compile_report,
    )
    # Counted before the rows are made: each row reads its probe record (~0.1 ms).
    lines = sum(1 for node in tree.nodes if node.depth <= shown.depth)
    if lines > MAX_ROWS:
        raise ValueError(
            f"{lines:,} modules down to depth {shown.depth}: more than the "
            f"{MAX_ROWS:,} lines the widget sends; pick a smaller depth, or in Python: "
            "torchxray.summary.summarize(tx.walk(model), report, depth=..., fold=False).csv()"
        )
    flat = summarize(tree, report, depth=shown.depth, fold=False)
    reply: SummaryReply = {
        "kind": "summary",
        "text": shown.text(),
        "csv": flat.csv(),
        "depth": shown.depth,
        "deepest": shown.deepest,
        "name": tree.root.cls,
    }
    return reply, NONE
