"""The tree's requests (listed in ``_view/handlers.py``): ``ping`` (the view's first request: it
has drawn), ``select``, a page of a module's ``children``, the ``filter`` (also the tree folded to
the modules that graph-break) and the ancestors that ``reveal`` a path. None of them changes the model."""

from __future__ import annotations

from ..protocol import ChildrenRequest, FilterRequest, PingRequest, RevealRequest, SelectRequest
from . import serialize as ser
from .compile_view import break_paths
from .host import NONE, SELECT, Host, States
from .replies import ChildrenReply, FilterReply, PongReply, RevealReply, SelectReply

__all__ = ["on_children", "on_filter", "on_ping", "on_reveal", "on_select"]


def on_ping(host: Host, req: PingRequest) -> tuple[PongReply, States]:
    return {"kind": "pong", "rev": host.rev}, NONE


def on_select(host: Host, req: SelectRequest) -> tuple[SelectReply, States]:
    return {"kind": "select", "path": host.select(req["path"])}, SELECT


def on_children(host: Host, req: ChildrenRequest) -> tuple[ChildrenReply, States]:
    tree = host.tree
    parent = tree[req["path"]].path
    rows, offset, limit = host.rows(), req["offset"], req["limit"]
    if req["unfold"]:
        got = ser.unfold_page(tree, parent, rows, offset, limit or ser.PAGE)
    else:
        # The folded runs of a parent, kept per tree: "more" on a parent of many children pages
        # through the same runs (bench/README.md, "more" page).
        runs = host.caches.get("folded", tree, dict)
        if parent not in runs:
            runs[parent] = ser.folded(tree, parent)
        got = ser.page(tree, parent, rows, offset, limit, runs=runs[parent])
    return {"kind": "children", "path": parent, **got}, NONE


def on_filter(host: Host, req: FilterRequest) -> tuple[FilterReply, States]:
    tree = host.tree
    if req["breaks"]:  # the Compile tab's fold: the rows whose own forward breaks
        paths = break_paths(host.compile_report)
        got = ser.rows_of(tree, host.rows(), [n for n in tree.nodes if n.path in paths])
        return {"kind": "filter", **got}, NONE
    got = ser.filter_rows(tree, host.rows(), req["query"], req["regex"], req["names"])
    return {"kind": "filter", **got}, NONE


def on_reveal(host: Host, req: RevealRequest) -> tuple[RevealReply, States]:
    return {"kind": "reveal", "chain": ser.reveal_chain(host.tree, req["path"])}, NONE
