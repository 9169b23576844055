"""A run's figures as JSON (`--json`), and back (`--render`): docs/benchmarks.md's tables are rendered from
a saved run, so they are the run's own figures, not copied by hand.

Timings measured interleaved keep their group, so a re-rendered ratio is the same median of
run-by-run ratios as the live one.
"""

from __future__ import annotations

from typing import Any

from .report import Results, Row
from .timing import Timing


def to_json(res: Results) -> dict[str, Any]:
    return {
        "machine": res.machine,
        "rows": [
            {
                "table": r.table,
                "model": r.model,
                "figure": r.figure,
                "note": r.note,
                "runs": r.ours.runs,
                "error": r.ours.error,
                "group": r.ours.group,
                "anchor": r.anchor_name,
                "anchor_runs": r.anchor.runs if r.anchor else None,
                "anchor_error": r.anchor.error if r.anchor else None,
                "anchor_group": r.anchor.group if r.anchor else None,
            }
            for r in res.rows
        ],
        "values": res.values,
        "notes": res.notes,
        "sections": res.sections,
    }


def from_json(data: dict[str, Any]) -> Results:
    res = Results(machine=data.get("machine", ""))
    for row in data["rows"]:
        ours = Timing(list(row["runs"]), row.get("error"), row.get("group"))
        anchor = None
        if row.get("anchor_runs") is not None or row.get("anchor_error"):
            anchor = Timing(
                list(row.get("anchor_runs") or []), row.get("anchor_error"), row.get("anchor_group")
            )
        res.add(
            Row(
                row["table"],
                row["model"],
                row["figure"],
                ours,
                row.get("anchor", ""),
                anchor,
                row.get("note", ""),
            )
        )
    res.values.update(data.get("values", {}))
    res.notes.extend(data.get("notes", []))
    res.sections.extend(data.get("sections", []))
    return res
