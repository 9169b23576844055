"""The execution-flow tools' requests (listed in ``_view/handlers.py``): ``flow`` (a page of the
last probe's calls as a call tree, runs of identical sibling calls folded) and ``graph`` (a module's children and the dataflow between them, as DOT: ``graph_dot.py``); and
the Overview's call sites (``site_rows``), each with the module whose source holds its line.

What is derived from one report (the call tree's lines, each path's callers) is kept on the session
until the report changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._probe.flow import callers_of
from . import graph_dot
from .flow_types import FlowLine, FlowReply, FlowRequest, GraphReply, GraphRequest, SiteRow
from .host import NONE, Host, States

if TYPE_CHECKING:
    from ..probe import ProbeReport
    from ..tree import ModelTree

__all__ = ["flow_lines", "on_flow", "on_graph", "site_rows"]

NO_PROBE = "no probe has run: run one from the Probe tab"


class _Derived:
    """What one report gives, made when first asked for."""

    def __init__(self, report: ProbeReport) -> None:
        self.report = report
        self.callers: dict[str, list[str]] = {}  # per path, as asked for
        self.lines: tuple[frozenset[str], list[tuple[Any, ...]]] | None = None
        self.counts: dict[str, int] | None = None
        self.keys: dict[int, Any] = {}  # flow_lines' subtree keys, kept for the next open fold

    def parents(self, path: str) -> list[str]:
        """The paths whose calls called `path`, in order of first call."""
        got = self.callers.get(path)
        if got is None:
            got = self.callers[path] = callers_of(self.report.flow, path)
        return got


def _derived(host: Host) -> _Derived | None:
    report = host.report
    if report is None:
        return None
    return host.caches.get("flow", report, lambda: _Derived(report))


# -- call sites ---------------------------------------------------------------------------------


def _owner(tree: ModelTree, callers: Sequence[str], function: str, file: str) -> tuple[Any, Any]:
    """The caller (path) and the class of its MRO whose `function` is the site's code, matched by
    qualified name and file; (None, None) when no caller's class holds it."""
    owner, _, method = function.rpartition(".")
    for path in callers:
        if path not in tree:
            continue
        for klass in type(tree.module(path)).__mro__:
            if klass.__qualname__ != owner:
                continue
            code = getattr(klass.__dict__.get(method), "__code__", None)
            if code is not None and code.co_filename == file:
                return path, f"{klass.__module__}.{klass.__qualname__}"
    return None, None


def site_rows(host: Host, path: str) -> list[SiteRow]:
    """The call sites of `path` in the last probe (none without one)."""
    got = _derived(host)
    rec = got.report.records.get(path) if got is not None else None
    if got is None or rec is None:
        return []
    tree = host.tree
    callers: list[str] | None = None  # read from the calls: only for a site that needs it
    rows: list[SiteRow] = []
    for site in rec.sites[:50]:
        caller, cls = (None, None)
        if site.line and not site.reason:
            if callers is None:
                callers = got.parents(path)
                node = tree.get(path)
                if node is not None and node.parent is not None and node.parent not in callers:
                    callers = [*callers, node.parent]
            caller, cls = _owner(tree, callers, site.function, site.file)
        rows.append(
            {
                "function": site.function,
                "file": site.file,
                "line": site.line,
                "text": site.text[:300],
                "count": site.count,
                "reason": site.reason,
                "caller": caller,
                "cls": cls,
            }
        )
    return rows


# -- the call tree ------------------------------------------------------------------------------


def flow_lines(
    report: ProbeReport, tree: ModelTree, open_: frozenset[str], keys: dict[int, Any] | None = None
) -> list[tuple[Any, ...]]:
    """The call tree's lines: ``("call", pos)`` or ``("fold", pos, count, last_pos, open,
    positions)``; a
    run of >= 2 sibling calls with equal subtrees (the same modules, relative to each) folds.
    ``keys``: the calls' subtree keys from an earlier call on this report (filled in here)."""
    entries = list(report.flow)
    n = len(entries)
    end = [n] * n
    stack: list[int] = []
    kids: dict[int, list[int]] = {}
    for i, e in enumerate(entries):
        while stack and entries[stack[-1]].depth >= e.depth:
            end[stack.pop()] = i
        stack.append(i)
        kids.setdefault(e.parent, []).append(i)
    if keys is None:
        keys = {}

    def key(i: int) -> Any:
        got = keys.get(i)
        if got is None:
            head = entries[i].path
            node = tree.get(head)
            cut = len(head)
            inner = tuple(
                (p[cut:] if p.startswith(head) else p, entries[k].depth - entries[i].depth)
                for k in range(i + 1, end[i])
                for p in (entries[k].path,)
            )
            got = keys[i] = (node.signature if node is not None else "", node is not None, inner)
        return got

    out: list[tuple[Any, ...]] = []

    def alike(i: int, j: int) -> bool:
        # Sizes first: most siblings differ there, and a key walks a whole subtree.
        if end[i] - i != end[j] - j:
            return False
        return bool(key(i) == key(j))

    def walk(siblings: list[int]) -> None:
        k = 0
        while k < len(siblings):
            i, m = siblings[k], k + 1
            if end[i] - i > 1 and m < len(siblings) and alike(i, siblings[m]) and key(i)[1]:
                while m < len(siblings) and alike(i, siblings[m]):
                    m += 1
            if m - k >= 2:
                is_open = str(i) in open_
                out.append(("fold", i, m - k, siblings[m - 1], is_open, tuple(siblings[k:m])))
                if not is_open:
                    k = m
                    continue
            for j in siblings[k:m]:
                out.append(("call", j))
                walk(kids.get(j, []))
            k = m

    walk(kids.get(-1, []))
    return out


def on_flow(host: Host, req: FlowRequest) -> tuple[FlowReply, States]:
    got = _derived(host)
    if got is None:
        reply: FlowReply = {
            "kind": "flow", "lines": [], "offset": 0, "total": 0, "calls": 0, "note": NO_PROBE
        }  # fmt: skip
        return reply, NONE
    flow, tree = got.report.flow, host.tree
    open_ = frozenset(req["open"])
    if got.lines is None or got.lines[0] != open_:
        got.lines = (open_, flow_lines(got.report, tree, open_, got.keys))
    lines = got.lines[1]
    if got.counts is None:
        got.counts = {}
        for e in flow:
            got.counts[e.path] = got.counts.get(e.path, 0) + 1
    counts = got.counts
    offset = min(req["offset"], len(lines))
    page: list[FlowLine] = []
    records = got.report.records

    def figures(pos: int) -> tuple[float | None, int | None]:
        """A call's time (a real probe measures it) and FLOPs (counted in a fake one)."""
        f = flow[pos]
        rec = records.get(f.path)
        calls = rec.call_records if rec is not None else ()
        if f.index >= len(calls):
            return None, None
        return calls[f.index].time_ms, calls[f.index].flops

    for line in lines[offset : offset + max(1, req["limit"])]:
        e = flow[line[1]]
        node = tree.get(e.path)
        fold = line[0] == "fold"
        each = [figures(p) for p in (line[5] if fold else (line[1],))]
        times = [t for t, _ in each]
        flops = [x for _, x in each]
        page.append(
            {
                "pos": line[1],
                "path": e.path,
                "cls": node.cls if node is not None else "?",
                "index": e.index,
                "calls": counts.get(e.path, 1),
                "depth": e.depth,
                "count": line[2] if fold else 0,
                "key": str(line[1]) if fold else "",
                "last": flow[line[3]].path if fold else "",
                "open": bool(line[4]) if fold else False,
                # A fold: its calls' sum; None where the probe did not measure it.
                "time_ms": None if None in times else sum(t for t in times if t is not None),
                "flops": None if None in flops else sum(x for x in flops if x is not None),
            }
        )
    note = "" if len(flow) else "the last probe recorded no module call"
    reply = {
        "kind": "flow",
        "lines": page,
        "offset": offset,
        "total": len(lines),
        "calls": len(flow),
        "note": note,
    }
    return reply, NONE


# -- the dataflow graph -------------------------------------------------------------------------


def on_graph(host: Host, req: GraphRequest) -> tuple[GraphReply, States]:
    node = host.tree[req["path"]]  # KeyError names close paths
    graph = graph_dot.build(host.tree, host.report, node.path, req["open"], req["depth"])
    reply: GraphReply = {
        "kind": "graph",
        "path": node.path,
        "dot": graph.dot,
        "nodes": graph.nodes,
        "edges": graph.edges,
        "note": graph.note,
        "depth": graph.depth,
    }
    return reply, NONE
