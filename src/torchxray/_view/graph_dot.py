"""The Graph tab's dataflow graph: a module's children, to a chosen depth, and the probe's edges
between them, as graphviz DOT (the frontend lays it out with @viz-js/viz, as the MRO tab does).

One level deep by default: an edge between two descendants is drawn between the children that hold
them, an edge from outside the module starts at "input", one to outside ends at "output"; edges
inside one child are its own graph (go into it). With ``depth`` 2 or more, a child with children
is a cluster holding its own children, down to that depth (``depth`` 0: all the way, Netron's and
torchview's whole-model view), within ``MAX_NODES`` boxes (the depth drawn is said). A run of
structurally identical children (equal ``Node.signature``, as the tree folds them) is one node "x12
GPT2Block" until expanded. Which node an edge joins is ``graph_links.py``'s.

Every label and tooltip is escaped (``graphviz.escape``: DOT escapes and ``<...>`` made literal):
module names and classes are the model's, never markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import graphviz

from .graph_links import links
from .serialize import folded

if TYPE_CHECKING:
    from ..probe import ProbeReport
    from ..tree import ModelTree
    from .flow_types import GraphNode

__all__ = ["MAX_NODES", "Graph", "build"]

_SHAPES_SHOWN = 2  # distinct shapes named on one edge's label
MAX_NODES = 400  # boxes drawn at most: past that a deeper view is laid out too slowly to read


def _text(text: str) -> str:
    return graphviz.escape("".join(ch if ch.isprintable() else " " for ch in text))


def _label(*lines: str) -> str:
    return graphviz.nohtml("\\n".join(_text(line) for line in lines))


def _dims(shape: Sequence[int]) -> str:
    return "×".join(map(str, shape)) if len(shape) else "scalar"


@dataclass(frozen=True)
class Graph:
    dot: str
    nodes: list[GraphNode]
    edges: int
    note: str
    depth: int = 1  # the depth drawn (0: all of it)


@dataclass
class _Drawing:
    """What the recursive layout collects: the nodes, which node holds each module path, and
    what tooltips call each node."""

    tree: ModelTree
    open_: set[str]
    depth: int  # levels drawn below the module (a large number: all)
    nodes: list[GraphNode] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=lambda: {"input": "input", "output": "output"})
    clusters: int = 0
    cut: int = 0  # children not drawn (past MAX_NODES boxes)


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
    tree: ModelTree,
    report: ProbeReport | None,
    path: str,
    open_: Sequence[str] = (),
    depth: int = 1,
) -> Graph:
    """The graph of `path`'s children, `depth` levels down (0: all; ``KeyError`` for an unknown
    path). A depth that would draw more than ``MAX_NODES`` boxes is lowered until it fits."""
    node = tree[path]
    path = node.path
    want = depth if depth > 0 else 1 << 30
    drawn = want
    while drawn > 1 and _count(tree, path, set(open_), drawn, 1) > MAX_NODES:
        drawn -= 1
    deepest = _deepest(tree, path)
    note = ""
    if drawn < want and drawn < deepest:
        note = f"{_count(tree, path, set(open_), drawn + 1, 1)} modules at depth {drawn + 1}: drawn to depth {drawn} (at most {MAX_NODES} boxes)"
    dot = graphviz.Digraph(
        name="dataflow",
        graph_attr={"rankdir": "TB", "nodesep": "0.25", "ranksep": "0.35", "tooltip": " ",
                    "fontname": "Helvetica", "fontsize": "10"},
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "Helvetica",
                   "fontsize": "10", "fillcolor": "#eef2f7", "color": "#555555"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9", "color": "#777777"},
    )  # fmt: skip
    d = _Drawing(tree, set(open_), drawn)
    _level(d, dot, path, 1)
    found, why = links(report, path, d.owner)
    if not node.children:
        found, why = (
            {},
            f"{node.path or 'the model'} has no child modules, so there is no dataflow inside it "
            "to draw: its inputs and outputs are in the Overview",
        )
    if d.cut:
        note = f"the first {MAX_NODES} boxes are drawn ({d.cut} more modules not shown)"
    note = "; ".join(x for x in (note, why) if x)
    if found:
        for end in ("input", "output"):
            if any(end in pair for pair in found):
                dot.node(end, label=end, shape="oval", style="dashed", id=f"graph-{end}")
                d.nodes.append(_node(end, "", end, "", 0, 0))
    for (a, b), link in found.items():
        shapes = list(dict.fromkeys(link.shapes))
        label = ", ".join(_dims(s) for s in shapes[:_SHAPES_SHOWN])
        if len(shapes) > _SHAPES_SHOWN:
            label += f" (+{len(shapes) - _SHAPES_SHOWN})"
        if len(link.sources) > 1:
            label += f" ×{len(link.sources)}"
        tip = f"{d.names[a]} → {d.names[b]}: {label}"
        if link.ops:
            tip += " via " + ", ".join(link.ops)
        if link.inferred:
            tip += " (inferred: no module produced or received it here)"
        attrs = {"label": _text(label), "tooltip": _text(tip), "labeltooltip": _text(tip)}
        if link.inferred:
            attrs["style"] = "dashed"
        dot.edge(a, b, **attrs)
    return Graph(dot.source, d.nodes, len(found), note, 0 if drawn >= deepest else drawn)


def _count(tree: ModelTree, path: str, open_: set[str], depth: int, level: int) -> int:
    """Boxes drawn for `path`'s children at `depth` (a cluster is not a box; its children are)."""
    n = 0
    kids = tree[path].children
    for start, count in _groups(tree, path, open_):
        kid = tree[kids[start]]
        if count == 1 and kid.children and level < depth:
            n += _count(tree, kid.path, open_, depth, level + 1)
            if n > MAX_NODES:
                return n
        else:
            n += 1
    return n


def _deepest(tree: ModelTree, path: str) -> int:
    """Levels of modules under `path` (1: children only)."""
    base = tree[path].depth
    return max((n.depth - base for n in tree.nodes if n.path.startswith(path)), default=0)


def _level(d: _Drawing, g: Any, path: str, level: int) -> None:
    """`path`'s children into `g` (the graph or a cluster): boxes, folded runs, and clusters of
    their own children while `level` < the depth drawn."""
    tree = d.tree
    kids = tree.children(path)
    for start, count in _groups(tree, path, d.open_):
        kid = kids[start]
        if count > 1:
            nid, last = f"g{len(d.nodes)}", kids[start + count - 1]
            label = _label(f"×{count} {kid.cls}", f"{kid.name} – {last.name}")
            tip = f"{count} identical {kid.cls} blocks: {kid.path} to {last.path} (click to expand)"
            g.node(nid, label=label, tooltip=_text(tip), peripheries="2", id=f"graph-{nid}")
            d.nodes.append(_node(nid, kid.path, "group", kid.path, count, len(kid.children)))
            d.names[nid] = f"{kid.name}–{last.name}"
            for k in range(start, start + count):
                d.owner[kids[k].path] = nid
        elif kid.children and level < d.depth:
            d.clusters += 1
            cid = f"cluster_c{d.clusters}"
            with g.subgraph(name=cid) as c:
                c.attr(label=_text(f"{kid.name} · {kid.cls}"), tooltip=_text(f"{kid.path} ({kid.qualname})"),
                       style="rounded,dashed", color="#888888", id=f"graph-{cid}")  # fmt: skip
                _level(d, c, kid.path, level + 1)
            d.nodes.append(_node(cid, kid.path, "cluster", "", 1, len(kid.children)))
        elif len(d.owner) >= MAX_NODES:
            d.cut += len(kids) - start  # a flat list of thousands: the first ones only
            return
        else:
            nid = f"n{len(d.nodes)}"
            tip = f"{kid.path} ({kid.qualname})"
            g.node(nid, label=_label(kid.name, kid.cls), tooltip=_text(tip), id=f"graph-{nid}")
            d.nodes.append(_node(nid, kid.path, "module", "", 1, len(kid.children)))
            d.names[nid] = kid.name
            d.owner[kid.path] = nid


def _node(nid: str, path: str, kind: str, key: str, count: int, nkids: int) -> GraphNode:
    return {"id": nid, "path": path, "kind": kind, "key": key, "count": count, "nkids": nkids}  # type: ignore[typeddict-item]
