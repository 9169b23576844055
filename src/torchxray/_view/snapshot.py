"""The read-only snapshot: what ``js/snapshot.ts`` needs to show a model without a kernel (rows,
child lists, overviews, forms, and per class its source and MRO), for the first modules."""

from __future__ import annotations

from ..forms import form
from ..mro import mro_classes, mro_graph
from ..source import source
from . import panes, probe_panes, tools_flow
from . import serialize as ser
from .highlight import highlight
from .host import Host
from .snapshot_types import Snapshot

__all__ = ["SNAPSHOT_NODES", "snapshot"]

SNAPSHOT_NODES = 2000
SNAPSHOT_GRAPHS = 200  # modules with children whose Graph tab the snapshot holds


def snapshot(host: Host, max_nodes: int = SNAPSHOT_NODES) -> Snapshot:
    """Everything the read-only view needs (``js/snapshot.ts``) for the first ``max_nodes``
    modules: rows, child lists, overviews, forms, and per class its source and MRO."""
    tree, rows, report, rev = host.tree, host.rows(), host.report, host.rev
    data: Snapshot = {
        "nodes": [],
        "children": {},
        "overview": {},
        "form": {},
        "cls_of": {},
        "source": {},
        "mro": {},
        "probe_table": None,
        "graph": {},
        "truncated": len(tree) > max_nodes,
    }
    for node in tree.nodes[:max_nodes]:
        data["nodes"].append({**rows.row(node), "depth": node.depth})
        if node.children:
            folded = ser.page(tree, node.path, rows, page_size=len(node.children))["items"]
            raw = [rows.child_row(tree, p) for p in node.children]
            data["children"][node.path] = {"folded": folded, "raw": raw}
        if node.children and len(data["graph"]) < SNAPSHOT_GRAPHS:
            data["graph"][node.path] = tools_flow.on_graph(
                host, {"kind": "graph", "path": node.path, "open": [], "depth": 1}
            )[0]
        rec = report.records.get(node.path) if report is not None else None
        why = report.why_not_called(node.path) if report is not None else None
        module = tree.module(node.path)
        # Inputs by argument name, as the live Overview shows them ("hidden_states: 2x16x128").
        params = panes.forward_params(module)
        sites = tools_flow.site_rows(host, node.path)
        writes = panes.write_lines(report, node.path, tree)
        data["overview"][node.path] = panes.overview(node, rec, why, params, sites, writes)
        key = f"{type(module).__module__}.{type(module).__qualname__}"
        data["cls_of"][node.path] = key
        try:
            if key not in data["source"]:
                src = source(module)
                data["source"][key] = panes.source_dict(src, highlight(src))
                data["mro"][key] = panes.mro_dict(mro_classes(module), mro_graph(module).source)
            data["form"][node.path] = panes.form_dict(form(module), node.path, rev, node.aliases)
        except Exception:  # noqa: BLE001 - a snapshot shows what it can; the pane says the rest
            continue
    if report is not None:
        data["probe_table"] = probe_panes.probe_table(
            report, host.previous, 0, len(report.records), rev
        )
    return data
