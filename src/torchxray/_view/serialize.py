"""IR (ModelTree nodes, probe reports, forms, patch entries) -> JSON-able dicts for the widget.

The tree travels lazily: ``first_state`` sends the root and the first levels within a row budget;
``page`` sends one node's children on demand, folding runs of structurally identical siblings
(equal ``Node.signature``) into one row ("x80 LlamaDecoderLayer") and paging long child lists.
The shapes are declared in ``replies.py`` (and generated for ``js/protocol_gen.ts``).

``first_state`` also takes a tree's ``Outline`` (``_tree/outline.py``): the same rows from the walk
alone, without counts, folded by structure, sent first for a big model while its tensors are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .panes import output_parts

if TYPE_CHECKING:
    from .._tree.outline import Outline, Sketch
    from ..patch import PatchLog
    from ..probe import ProbeReport
    from ..tree import ModelTree, Node
    from .replies import FilterResult, Item, Mark, NodeRow, Page, RevealStep, TreeState

__all__ = [
    "FOLD_MIN",
    "PAGE",
    "RowMaker",
    "filter_rows",
    "first_state",
    "page",
    "reveal_chain",
    "rows_of",
    "unfold_page",
]

PAGE = 200  # rows per children page
FOLD_MIN = 3  # a run of at least this many identical siblings is folded
FIRST_ROWS = 1500  # row budget of the first state (keeps a 100k-module model's first state small)
FIRST_DEPTH = 2
FILTER_ROWS = 2000


def _patched(log: PatchLog | None) -> frozenset[str]:
    if log is None:
        return frozenset()
    return frozenset(p for e in log.entries for p in e.paths)


def _is_patched(path: str, patched: frozenset[str]) -> bool:
    if not patched:
        return False
    parts = path.split(".") if path else []
    return any(".".join(parts[: i + 1]) in patched for i in range(len(parts)))


_OUT_ALL = 40  # outputs listed in a row's tooltip
_WRITES = 20  # writes named on one row


def _writes(report: ProbeReport | None) -> dict[str, list[str]]:
    """Per module path, what its forward wrote to it in the last probe, as the row names it
    ("writes self.seen"), once each; torch's flags, registries and files are on no row."""
    out: dict[str, list[str]] = {}
    if report is None:
        return out
    for w in report.writes:
        if not w.outside:
            labels = out.setdefault(w.path, [])
            if w.label not in labels and len(labels) < _WRITES:
                labels.append(w.label)
    return out


def _clip_all(parts: list[str]) -> str:
    more = len(parts) - _OUT_ALL
    return "\n".join(parts[:_OUT_ALL]) + (f"\n… {more} more" if more > 0 else "")


class RowMaker:
    """Turns nodes into rows with the markers of the current probe and patch log."""

    def __init__(
        self,
        report: ProbeReport | None,
        log: PatchLog | None,
        breaks: frozenset[str] = frozenset(),
    ) -> None:
        self.report = report
        self.breaks = breaks  # modules whose own forward graph-breaks (last compile check)
        self.patched = _patched(log)
        self.writes = _writes(report)
        self.failed = report.error.path if report is not None and report.error is not None else None
        # Its ancestors are marked too: a failure inside collapsed rows is seen from the top.
        self.above_failed: frozenset[str] = frozenset()
        if self.failed:
            parts = self.failed.split(".")
            self.above_failed = frozenset(".".join(parts[:i]) for i in range(len(parts)))

    def row(self, node: Node | Sketch) -> NodeRow:
        marks: list[Mark] = []
        if node.aliases:
            marks.append("alias")
        if node.hooks:
            marks.append("hooks")
        if node.forward_patched:
            marks.append("fwd")
        if node.is_custom:
            marks.append("custom")
        if getattr(node, "parametrizations", ()):
            marks.append("param")
        if getattr(node, "wraps", None) is not None:
            marks.append("wrap")
        if _is_patched(node.path, self.patched):
            marks.append("patched")
        if self.failed is not None and node.path == self.failed:
            marks.append("error")
        elif node.path in self.above_failed:
            marks.append("inside_error")
        row: NodeRow = {
            "path": node.path,
            "name": node.name,
            "cls": node.cls,
            "nkids": len(node.children),
        }
        params = getattr(node, "params_total", None)  # an outline's Sketch has no counts yet
        if params is not None:
            row["params"] = params
            if params and not node.trainable_total:  # type: ignore[union-attr]
                marks.append("frozen")
        rec = self.report.records.get(node.path) if self.report is not None else None
        if rec is not None and rec.contract:
            marks.append("contract")
        if node.path in self.breaks:
            marks.append("break")
        if rec is not None and rec.output_shapes:
            # The first output by name ("logits: 1×8×100 +9"); the row's tooltip lists them all.
            parts = output_parts(rec.outputs)
            row["out"] = parts[0] + (f" +{len(parts) - 1}" if len(parts) > 1 else "")
            if len(parts) > 1:
                row["out_all"] = _clip_all(parts)
        elif rec is None and self.report is not None and self.report.ok:
            why = self.report.why_not_called(node.path)
            if why is not None:
                row["not_called"] = why
        wrote = self.writes.get(node.path)
        if wrote:
            row["writes"] = wrote
        place = getattr(node, "placement", "")
        if place.startswith(("offloaded", "DTensor")) or ";" in place:  # not one plain device
            row["placement"] = place
        if marks:
            row["marks"] = marks
        return row

    def child_row(self, tree: ModelTree | Outline, path: str) -> NodeRow:
        """The row at ``path`` among its parent's children. An alias path (the same module object
        registered twice, e.g. ``Sequential(lin, lin)``) keeps its own path and name, so that it
        does not show as a second copy of the canonical row with the same key."""
        node = tree[path]
        row = self.row(node)
        if node.path != path:
            row["path"] = path
            row["name"] = path.rsplit(".", 1)[-1]
            row["alias_of"] = node.path
            if "alias" not in row.setdefault("marks", []):
                row["marks"].insert(0, "alias")
        return row


def folded(tree: ModelTree | Outline, parent: str) -> list[tuple[int, int]]:
    """Runs of the parent's children as (start, count); count >= FOLD_MIN means folded."""
    kids = tree[parent].children
    runs: list[tuple[int, int]] = []
    i = 0
    while i < len(kids):
        sig = tree[kids[i]].signature
        j = i + 1
        while j < len(kids) and tree[kids[j]].signature == sig and sig:
            j += 1
        if j - i >= FOLD_MIN:
            runs.append((i, j - i))
        else:
            runs.extend((k, 1) for k in range(i, j))
        i = j
    return runs


def page(
    tree: ModelTree | Outline,
    parent: str,
    rows: RowMaker,
    offset: int = 0,
    limit: int = 0,
    unfold: bool = False,
    page_size: int = 0,
    runs: list[tuple[int, int]] | None = None,
) -> Page:
    """Children of ``parent``: folded items (offset/limit over folded runs) or, with ``unfold``,
    plain rows of the raw children (offset/limit over child indices, e.g. to open a fold).
    ``runs``: ``folded(tree, parent)`` when the caller keeps it (it reads every child: most of
    a page's time for a parent of 30,000 children)."""
    node = tree[parent]
    size = page_size or PAGE
    limit = size if limit <= 0 else min(limit, size)
    items: list[Item] = []
    if unfold:
        kids = node.children
        end = min(len(kids), offset + limit)
        items = [rows.child_row(tree, p) for p in kids[offset:end]]
        return {"items": items, "total": len(kids), "offset": offset}
    if runs is None:
        runs = folded(tree, parent)
    for start, count in runs[offset : offset + limit]:
        first = tree[node.children[start]]
        if count == 1:
            items.append(rows.child_row(tree, node.children[start]))
        else:
            last = node.children[start + count - 1]
            items.append(
                {
                    "fold": count,
                    "parent": parent,
                    "start": start,
                    "cls": first.cls,
                    "first": node.children[start],
                    "last": last,
                }
            )
    if offset + limit < len(runs):
        items.append(
            {
                "more": len(runs) - offset - limit,
                "parent": parent,
                "offset": offset + limit,
                "unfold": False,
            }
        )
    return {"items": items, "total": len(runs), "offset": offset}


def unfold_page(tree: ModelTree, parent: str, rows: RowMaker, offset: int, want: int) -> Page:
    """Rows ``offset .. offset+want`` of the raw children, a page at a time with a "more" row."""
    got = page(tree, parent, rows, offset, want, unfold=True)
    end = offset + len(got["items"])
    # A "more" row asks for the rest of the requested range (e.g. the rest of a fold).
    remaining = min(want, got["total"] - offset) - (end - offset)
    if remaining > 0:
        got["items"].append({"more": remaining, "parent": parent, "offset": end, "unfold": True})
    return got


def first_state(
    tree: ModelTree | Outline, rows: RowMaker, rev: int, model_rev: int = 0
) -> TreeState:
    """Root row plus pages of the first levels, breadth first, within ``FIRST_ROWS`` rows."""
    root = tree.root
    pages: dict[str, Page] = {}
    budget = FIRST_ROWS
    frontier: list[Node | Sketch] = [root]
    for _ in range(FIRST_DEPTH):
        nxt: list[Node | Sketch] = []
        for node in frontier:
            if not node.children or budget <= 0:
                continue
            p = page(tree, node.path, rows)
            pages[node.path] = p
            budget -= len(p["items"])
            for item in p["items"]:
                path = item.get("path")  # fold and "more" rows have none
                if isinstance(path, str):
                    nxt.append(tree[path])
        frontier = nxt
    state: TreeState = {"rev": rev, "root": rows.row(root), "pages": pages, "model_rev": model_rev}
    if not hasattr(root, "params_total"):
        state["outline"] = True
    return state


def reveal_chain(tree: ModelTree, path: str) -> list[RevealStep]:
    """For each ancestor of ``path``: the parent path and the child's index among its children."""
    node = tree[path]
    chain: list[RevealStep] = []
    while node.parent is not None:
        parent = tree[node.parent]
        chain.append({"parent": parent.path, "index": parent.children.index(node.path)})
        node = parent
    return chain[::-1]


def matcher(query: str, regex: bool) -> Callable[[str], bool]:
    """The filter's test: a case-insensitive substring, or a regex (ValueError when it does not
    compile), searched in a text. The saved view's filter (js/filter_match.ts) reads a query the
    same way: js/filter_cases.json holds the cases both sides are checked against."""
    if regex:
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except re.error as e:
            raise ValueError(f"bad regular expression {query!r}: {e}") from None
        return lambda text: pattern.search(text) is not None
    q = query.lower()
    return lambda text: q in text.lower()


def matching(tree: ModelTree, query: str, regex: bool, names: bool) -> list[Node]:
    """The nodes the filter matches, in tree order: ``query`` in the path or the class, or with
    ``names`` in the module's own name only (the root has none)."""
    test = matcher(query, regex)
    if names:
        return [n for n in tree.nodes if n.path and test(n.name)]
    return [n for n in tree.nodes if test(n.path) or test(n.cls)]


def filter_rows(
    tree: ModelTree, rows: RowMaker, query: str, regex: bool, names: bool = False
) -> FilterResult:
    """Matches of ``query`` (substring, case-insensitive, or a regex) in the path or the class (or,
    with ``names``, in the module's own name only), with their ancestors, in tree order: at most
    ``FILTER_ROWS`` rows."""
    return rows_of(tree, rows, matching(tree, query, regex, names))


def rows_of(tree: ModelTree, rows: RowMaker, matches: list[Node]) -> FilterResult:
    """``matches`` with their ancestors, in tree order, as the filter shows them (at most
    ``FILTER_ROWS`` rows): the filter's answer, and the tree folded to the breaking rows."""
    keep: dict[str, bool] = {}
    truncated = False
    for n in matches:
        if len(keep) >= FILTER_ROWS:
            truncated = True
            break
        keep[n.path] = True
        parent = n.parent
        while parent is not None and parent not in keep:
            keep[parent] = False
            parent = tree[parent].parent
    out = []
    for n in tree.nodes:
        if n.path in keep:
            r = rows.row(n)
            r["depth"] = n.depth
            r["match"] = keep[n.path]
            out.append(r)
    return {"count": len(matches), "rows": out, "truncated": truncated}
