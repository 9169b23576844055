"""From what each target found to the report's rows: issues made from the engine's failures and
the targets' ops (`export_issue`, `op_issues`), copied onto interchangeable blocks that stood in
for themselves (`copied`), and each module's status per target (`statuses`)."""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterable, Mapping

from .._compile.records import ExportFailure
from .records import (
    DATA_DEPENDENT,
    DYNAMIC_SHAPE,
    NOT_DELEGATED,
    UNTRACEABLE,
    ExportIssue,
    TargetResult,
)

__all__ = ["copied", "export_issue", "inside", "merge", "statuses"]

_EXPR = re.compile(r"data-dependent expression (.+?)(?: \(unhinted|\s*$|\. )")


def inside(path: str, roots: Iterable[str]) -> bool:
    """Whether `path` is one of `roots` or in the subtree of one."""
    return any(path == r or path.startswith(r + ".") or r == "" for r in roots)


def export_issue(f: ExportFailure) -> ExportIssue:
    """The torch.export stage's issue for one of the engine's failures."""
    text = f"{f.kind} {f.reason}"
    source = linecache.getline(f.file, f.line).strip() if f.file else ""
    if f.kind == "ConstraintViolation" or "Constraints violated" in text:
        return ExportIssue("export", f.path, f.cls, f.kind if f.kind != "ConstraintViolation" else "dynamic dimension",
                           DYNAMIC_SHAPE, f.reason, f.file, f.line, source)  # fmt: skip
    if "data-dependent" in text or "DataDependent" in f.kind:
        found = _EXPR.search(f.reason)
        op = found.group(1) if found else f.kind
        return ExportIssue(
            "export", f.path, f.cls, op, DATA_DEPENDENT, f.reason, f.file, f.line, source
        )
    return ExportIssue(
        "export", f.path, f.cls, f.kind, UNTRACEABLE, f.reason, f.file, f.line, source
    )


def merge(issues: list[ExportIssue]) -> list[ExportIssue]:
    """One issue per (target, module, op, line), counting the nodes it stands for, in order."""
    out: dict[tuple[str, str, str, str, int, str], ExportIssue] = {}
    for i in issues:
        key = (i.target, i.path, i.op, i.file, i.line, i.kind)
        got = out.get(key)
        if got is None:
            out[key] = i
        else:
            out[key] = ExportIssue(got.target, got.path, got.cls, got.op, got.kind, got.reason,
                                   got.file, got.line, got.source, got.count + i.count)  # fmt: skip
    return list(out.values())


def copied(
    issues: list[ExportIssue], copies: Mapping[str, list[str]], cls_of: Mapping[str, str]
) -> list[ExportIssue]:
    """`issues` and, for each block in `copies` (first member -> the members that stood in
    for themselves), the same issues on every member, in order."""
    out: list[ExportIssue] = []
    for i in issues:
        out.append(i)
        for first, others in copies.items():
            if not inside(i.path, [first]) or first == "":
                continue
            for other in others:
                path = other + i.path[len(first) :]
                out.append(ExportIssue(i.target, path, cls_of.get(path, i.cls), i.op, i.kind,
                                       i.reason, i.file, i.line, i.source, i.count))  # fmt: skip
    return out


def statuses(
    modules: Iterable[str],
    targets: Mapping[str, TargetResult],
    issues: list[ExportIssue],
    unchecked: Mapping[str, list[str]],
    counts: Mapping[str, list[int]],
) -> dict[str, dict[str, str]]:
    """path -> target -> "ok" / "fails" / "not checked" / ExecuTorch's "delegated", "portable",
    "partly delegated". `unchecked`: per target, the subtrees it could not look into (modules
    torch.export failed in, whose ops it never saw). Modules not reached are left out."""
    paths = list(modules)
    out: dict[str, dict[str, str]] = {p: {} for p in paths}
    for name, result in targets.items():
        if result.status in ("not installed", "error", "not checked") and name != "export":
            for p in paths:
                out[p][name] = "not checked"
            continue
        failing = [i.path for i in issues if i.target == name and i.kind != NOT_DELEGATED]
        blind = unchecked.get(name, [])
        for p in paths:
            prefix = p + "."
            fails = any(not p or f == p or f.startswith(prefix) for f in failing)
            if fails:
                out[p][name] = "fails"
            elif inside(p, blind):
                out[p][name] = "not checked"
            elif name == "executorch":
                d = sum(c[0] for q, c in counts.items() if not p or q == p or q.startswith(prefix))
                q_ = sum(c[1] for q, c in counts.items() if not p or q == p or q.startswith(prefix))
                out[p][name] = ("partly delegated" if d and q_ else "delegated" if d
                                else "portable" if q_ else "ok")  # fmt: skip
            else:
                out[p][name] = "ok"
    return out
