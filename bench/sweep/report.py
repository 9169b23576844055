"""The sweep's table: per family, how many models were attempted, how many ran bare, and each
check's rate among those whose bare forward ran; then every failing model with its first error."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from .checks import CHECKS, Outcome

_RATED = tuple(c for c in CHECKS if c != "bare")


def rates(outcomes: Iterable[Outcome]) -> dict[str, dict[str, tuple[int, int]]]:
    """{family: {check: (ok, applicable)}}, checks counted over models whose bare forward ran;
    "attempted" and "bare" count every model."""
    table: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for o in outcomes:
        row = table[o.family]
        row["attempted"][0] += 1
        row["attempted"][1] += 1
        bare = o.status("bare") == "ok"
        row["bare"][0] += bare
        row["bare"][1] += 1
        if not bare:
            continue
        for check in _RATED:
            status = o.status(check)
            if status == "n/a":
                continue
            row[check][1] += 1
            row[check][0] += status == "ok"
    return {f: {c: (v[0], v[1]) for c, v in row.items()} for f, row in table.items()}


def _cell(ok: int, n: int) -> str:
    return "-" if n == 0 else f"{ok}/{n} ({100 * ok / n:.0f}%)" if ok != n else f"{n}/{n}"


def render(outcomes: list[Outcome], header: str = "") -> str:
    table = rates(outcomes)
    cols = ("attempted", "bare", *_RATED)
    lines = [header] if header else []
    lines.append("| family | " + " | ".join(cols) + " |")
    lines.append("|---" * (len(cols) + 1) + "|")
    total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for family, row in table.items():
        cells = []
        for c in cols:
            ok, n = row.get(c, (0, 0))
            total[c][0] += ok
            total[c][1] += n
            cells.append(str(n) if c == "attempted" else _cell(ok, n))
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    if len(table) > 1:
        cells = [str(total[c][1]) if c == "attempted" else _cell(*total[c]) for c in cols]
        lines.append("| **all** | " + " | ".join(cells) + " |")
    failing = [o for o in outcomes if o.status("bare") == "ok" and o.first_error()]
    if failing:
        lines += ["", "Failing (bare forward ran; first failing check):", ""]
        for o in failing:
            check, text = o.first_error()  # type: ignore[misc]
            lines.append(f"- {o.family}/{o.name} [{o.device}] {check}: {text}")
    lines += _compile_lines(outcomes)
    lines += forms_lines(outcomes)
    lines += _export_lines(outcomes)
    broken = [o for o in outcomes if o.status("bare") != "ok"]
    if broken:
        lines += ["", f"Not counted: bare forward or build failed ({len(broken)}):", ""]
        lines += [f"- {o.family}/{o.name}: {o.checks['bare'][1]}" for o in broken]
    return "\n".join(lines)


def _compile_lines(outcomes: list[Outcome]) -> list[str]:
    """The compile column's disagreements (model, ours, torch's) and how the places of the
    breaks compare where both saw some (`compile_col`'s rule)."""
    compared = [o for o in outcomes if o.status("compile") in ("ok", "fail")]
    if not compared:
        return []
    differ = [o for o in compared if o.status("compile") == "fail"]
    places: dict[str, int] = defaultdict(int)
    for o in compared:
        if o.compile and o.compile.get("places"):
            places[o.compile["places"]] += 1
    lines = [
        "",
        f"Compile: the verdict agrees with dynamo.explain on {len(compared) - len(differ)}/"
        f"{len(compared)}; places of the breaks: "
        + (", ".join(f"{k} {v}" for k, v in sorted(places.items())) or "no breaks"),
    ]
    if differ:
        lines += ["", "Compile disagreements (ours | torch's):", ""]
        lines += [f"- {o.family}/{o.name}: {o.checks['compile'][1]}" for o in differ]
    return lines


def forms_lines(outcomes: list[Outcome]) -> list[str]:
    """The forms column's figures (`handwritten.forms_check`): per family, the user's classes
    (every class not defined in torch) and torch's, each distinct class once (its first model),
    exact / refused / silent / raised; then every user class that is not exact, with why."""
    judged = [o for o in outcomes if o.forms]
    if not judged:
        return []
    lines = ["", "Forms (each distinct class once; exact = the gate passed and an unchanged edit "
             "rebuilt the same repr, state_dict and attributes):", ""]  # fmt: skip
    lines += [
        "| family | classes | exact | refused | silent | raised |",
        "|---|---|---|---|---|---|",
    ]
    firsts: dict[str, dict[tuple[str, str, bool], tuple[Outcome, dict]]] = defaultdict(dict)
    for o in judged:
        for r in o.forms or []:
            firsts[o.family].setdefault((r["module"], r["cls"], r["torch"]), (o, r))
    for family, rs in firsts.items():
        for torch_side in (False, True):
            group = [r for (_, _, t), (_, r) in rs.items() if t is torch_side]
            if not group:
                continue
            n = len(group)
            count = {
                s: sum(r["status"] == s for r in group)
                for s in ("exact", "refused", "silent", "raised")
            }
            who = "torch classes" if torch_side else "user classes"
            lines.append(f"| {family} ({who}) | {n} | {_cell(count['exact'], n)} | {count['refused']} "
                         f"| {count['silent']} | {count['raised']} |")  # fmt: skip
    bad = [(o, r) for rs in firsts.values() for (o, r) in rs.values() if r["status"] != "exact"]
    if bad:
        lines += ["", "Forms not exact:", ""]
        for o, r in sorted(bad, key=lambda p: (p[0].family, p[1]["torch"], p[0].name)):
            side = " [torch]" if r["torch"] else ""
            lines.append(f"- {o.family}/{o.name}: {r['cls']}{side} ({r['path'] or '(root)'}) "
                         f"{r['status']}: {r['why'][:300]}")  # fmt: skip
    return lines


def _export_lines(outcomes: list[Outcome]) -> list[str]:
    """The export column: on how many models the ONNX ops agree with torch.onnx.export's report,
    how many are ready, and each disagreement (`export_col`'s rule)."""
    compared = [o for o in outcomes if o.status("export") in ("ok", "fail")]
    if not compared:
        return []
    differ = [o for o in compared if o.status("export") == "fail"]
    ready = [o for o in compared if o.checks["export"][1].startswith("ready")]
    lines = [
        "",
        f"Export: the ONNX verdict agrees with torch.onnx.export(report=True) on "
        f"{len(compared) - len(differ)}/{len(compared)}; ready for export and ONNX: "
        f"{len(ready)}/{len(compared)}",
    ]
    not_ready = [o for o in compared if o not in ready and o not in differ]
    if not_ready:
        lines += ["", "Export: failing modules (ours | torch's):", ""]
        lines += [f"- {o.family}/{o.name}: {o.checks['export'][1]}" for o in not_ready]
    if differ:
        lines += ["", "Export disagreements (ours | torch's):", ""]
        lines += [f"- {o.family}/{o.name}: {o.checks['export'][1]}" for o in differ]
    return lines
