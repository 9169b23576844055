"""The read-only snapshot's shape (``_view/snapshot.py`` makes it; ``ex.save_snapshot()`` and
``ex.to_html()`` carry it; ``js/snapshot.ts`` answers the browsing requests from it), beside
``replies.py`` as ``compare_types.py`` is; generated into ``js/tools_gen.ts``."""

from __future__ import annotations

from typing_extensions import TypedDict

from .flow_types import GraphReply
from .replies import FormReply, Item, MroReply, NodeRow, Overview, ProbeTableReply, SourceReply

__all__ = ["Snapshot", "SnapshotChildren"]


class SnapshotChildren(TypedDict):
    folded: list[Item]  # as a `children` request pages them, identical runs folded
    raw: list[NodeRow]  # each child, for an unfolded run and for `reveal`


class Snapshot(TypedDict):
    """The read-only view's data for the first modules of the model."""

    nodes: list[NodeRow]  # pre-order, with depth: the filter's rows
    children: dict[str, SnapshotChildren]
    overview: dict[str, Overview]
    form: dict[str, FormReply]
    cls_of: dict[str, str]  # path -> "module.Class", the key of `source` and `mro`
    source: dict[str, SourceReply]
    mro: dict[str, MroReply]
    probe_table: ProbeTableReply | None
    # The Graph tab's one-level graphs of the first modules with children (the probe's dataflow
    # as it was recorded), by path.
    graph: dict[str, GraphReply]
    truncated: bool  # the model has more modules than the snapshot holds
