"""The Graph tab's dataflow graph: a module's direct children and the probe's edges between them,
as graphviz DOT (the frontend lays it out with @viz-js/viz, as the MRO tab does).

One level deep: an edge between two descendants is drawn between the children that hold them, an
edge from outside the module starts at "input", one to outside ends at "output"; edges inside one
child are its own graph (go into it). A run of structurally identical children (equal
``Node.signature``, as the tree folds them) is one node "x12 GPT2Block" until expanded. Where a
module's input or output comes from no module (the model's own input, a returned tensor), the
edges to "input" / "output" are inferred and dashed: children no module fed, and children whose
output no module here received.

Every label and tooltip is escaped (``graphviz.escape``: DOT escapes and ``<...>`` made literal):
module names and classes are the model's, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import graphviz

from .serialize import folded

if TYPE_CHECKING:
    from ..probe import ProbeReport
    from ..tree import ModelTree
    from .flow_types import GraphNode

__all__ = ["Graph", "build"]

_SHAPES_SHOWN = 2  # distinct shapes named on one edge's label


def _text(text: str) -> str:
    return graphviz.escape("".join(ch if ch.isprintable() else " " for ch in text))


def _label(*lines: str) -> str:
    return graphviz.nohtml("\\n".join(_text(line) for line in lines))


def _dims(shape: Sequence[int]) -> str:
    return "×".join(map(str, shape)) if len(shape) else "scalar"


@dataclass
class _Link:
    """The edges between two nodes: those into the destination module itself when there are
    any (not the same tensor again into its descendants), else all."""

    shapes: list[tuple[int, ...]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    sources: set[tuple[str, int]] = field(default_factory=set)
    direct: bool = False
    inferred: bool = False

    def add(
        self, src: tuple[str, int], shape: tuple[int, ...], ops: Sequence[str], direct: bool
    ) -> None:
        if self.direct and not direct:
            return
        if direct and not self.direct:
            self.shapes, self.ops, self.sources, self.direct = [], [], set(), True
        self.shapes.append(shape)
        self.ops.extend(o for o in ops if o not in self.ops)
        self.sources.add(src)


@dataclass(frozen=True)
class Graph:
    dot: str
    nodes: list[GraphNode]
    edges: int
    note: str


def _groups(tree: ModelTree, path: str, open_: set[str]) -> list[tuple[int, int]]:
    """The tree's runs of `path`'s children (`serialize.folded`), an opened group as single kids."""
    out: list[tuple[int, int]] = []
    for start, count in folded(tree, path):
        if count > 1 and tree[path].children[start] in open_:
            out.extend((k, 1) for k in range(start, start + count))
        else:
            out.append((start, count))
    return out


def build(
    tree: ModelTree, report: ProbeReport | None, path: str, open_: Sequence[str] = ()
) -> Graph:
    """The graph of `path`'s children (``KeyError`` for an unknown path)."""
    node = tree[path]
    path = node.path
    kids = tree.children(path)
    nodes: list[GraphNode] = []
    owner: dict[str, str] = {}  # a child's name -> its node id
    names = {"input": "input", "output": "output"}  # node id -> what tooltips call it
    dot = graphviz.Digraph(
        name="dataflow",
        graph_attr={"rankdir": "TB", "nodesep": "0.25", "ranksep": "0.35", "tooltip": " "},
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica",
                   "fontsize": "10", "fillcolor": "#eef2f7", "color": "#555555"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9", "color": "#777777"},
    )  # fmt: skip
    for start, count in _groups(tree, path, set(open_)):
        kid = kids[start]
        if count > 1:
            nid, last = f"g{start}", kids[start + count - 1]
            label = _label(f"×{count} {kid.cls}", f"{kid.name} – {last.name}")
            tip = f"{count} identical {kid.cls} blocks: {kid.path} to {last.path} (click to expand)"
            dot.node(nid, label=label, tooltip=_text(tip), peripheries="2", id=f"graph-{nid}")
            nodes.append(_node(nid, kid.path, "group", kid.path, count, len(kid.children)))
            names[nid] = f"{kid.name}–{last.name}"
        else:
            nid = f"n{start}"
            tip = f"{kid.path} ({kid.qualname})"
            dot.node(nid, label=_label(kid.name, kid.cls), tooltip=_text(tip), id=f"graph-{nid}")
            nodes.append(_node(nid, kid.path, "module", "", 1, len(kid.children)))
            names[nid] = kid.name
        for k in range(start, start + count):
            owner[kids[k].name] = nid
    links, note = _links(report, path, owner)
    if not kids:
        links, note = (
            {},
            f"{node.path or 'the model'} has no child modules: its inputs and outputs are in the Overview",
        )
    if links:
        for end in ("input", "output"):
            if any(end in pair for pair in links):
                dot.node(end, label=end, shape="oval", style="dashed", id=f"graph-{end}")
                nodes.append(_node(end, "", end, "", 0, 0))
    for (a, b), link in links.items():
        shapes = list(dict.fromkeys(link.shapes))
        label = ", ".join(_dims(s) for s in shapes[:_SHAPES_SHOWN])
        if len(shapes) > _SHAPES_SHOWN:
            label += f" (+{len(shapes) - _SHAPES_SHOWN})"
        if len(link.sources) > 1:
            label += f" ×{len(link.sources)}"
        tip = f"{names[a]} → {names[b]}: {label}"
        if link.ops:
            tip += " via " + ", ".join(link.ops)
        if link.inferred:
            tip += " (inferred: no module produced or received it here)"
        attrs = {"label": _text(label), "tooltip": _text(tip), "labeltooltip": _text(tip)}
        if link.inferred:
            attrs["style"] = "dashed"
        dot.edge(a, b, **attrs)
    return Graph(dot.source, nodes, len(links), note)


def _node(nid: str, path: str, kind: str, key: str, count: int, nkids: int) -> GraphNode:
    return {"id": nid, "path": path, "kind": kind, "key": key, "count": count, "nkids": nkids}  # type: ignore[typeddict-item]


def _links(
    report: ProbeReport | None, path: str, owner: dict[str, str]
) -> tuple[dict[tuple[str, str], _Link], str]:
    """The edges between the nodes (ids), input and output, and a note when there are none."""
    if report is None:
        return {}, "no probe has run: run one from the Probe tab"
    if report.mode != "fake":
        return {}, "a real probe records no dataflow: run a fake probe from the Probe tab"
    prefix = f"{path}." if path else ""
    cut = len(prefix)
    depth = prefix.count(".")  # dots in a child's path

    def where(p: str) -> str:
        """The node holding `p`; "" for the module itself, "input" for outside."""
        if p == path:
            return ""
        if not p.startswith(prefix):
            return "input"
        return owner.get(p[cut:].split(".", 1)[0], "input")

    links: dict[tuple[str, str], _Link] = {}
    fed: set[str] = set()
    used: set[tuple[str, int]] = set()  # a child's calls whose output a module here received
    for e in report.edges:
        fed.add(e.dst)
        used.add((e.src, e.src_index))
        a, b = where(e.src), where(e.dst)
        if not b or not a or a == b:
            continue
        if b == "input":  # from a descendant to outside
            b = "output"
        direct = b == "output" or e.dst.count(".") == depth
        links.setdefault((a, b), _Link()).add((e.src, e.src_index), e.shape, e.ops, direct)
    has = {end for pair in links for end in pair}
    if "input" in has and "output" in has:
        return links, ""
    calls: dict[str, int] = {}  # the children's calls (records are made only where needed)
    for f in report.flow:
        if f.path.startswith(prefix) and f.path[cut:] in owner:
            calls[f.path] = calls.get(f.path, 0) + 1
    for name, nid in owner.items():
        kid = prefix + name
        if kid not in calls:  # not called (a ModuleList's blocks are called one by one)
            continue
        if "input" not in has and kid not in fed:
            link = links.setdefault(("input", nid), _Link(inferred=True))
            for shape in report.records[kid].input_shapes[:1]:
                link.add(("", 0), tuple(shape), (), True)
        if "output" not in has and any((kid, i) not in used for i in range(calls[kid])):
            link = links.setdefault((nid, "output"), _Link(inferred=True))
            for shape in report.records[kid].output_shapes[:1]:
                link.add(("", 0), tuple(shape), (), True)
    note = "" if links else "no dataflow between these modules in the last probe"
    return links, note
