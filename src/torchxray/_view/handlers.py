"""One handler per request kind: the table ``Session.handle`` dispatches through. A table, not a
name built from the kind, so that every entry point into the session is listed here; each handler
is ``on_<kind>(host, request) -> (reply, states)`` (``_view/host.py``), and
``tests/test_protocol.py`` checks the table against ``protocol.REQUEST_TYPES`` and ``REPLIES``.

    >>> HANDLERS["undo"].__module__, HANDLERS["undo"].__name__
    ('torchxray._view.tools_patch', 'on_undo')
"""

from __future__ import annotations

from . import attach_view as attach
from . import tools_classes as classes
from . import tools_compare as compare
from . import tools_compile as compile_
from . import tools_export as export
from . import tools_flow as flow
from . import tools_memory as memory
from . import tools_patch as patch
from . import tools_probe as probe
from . import tools_ranks as ranks
from . import tools_summary as summary
from . import tools_tree as tree
from . import tools_watch as watch
from .host import Handler

__all__ = ["HANDLERS"]

HANDLERS: dict[str, Handler] = {
    # the tree
    "ping": tree.on_ping,
    "select": tree.on_select,
    "children": tree.on_children,
    "filter": tree.on_filter,
    "reveal": tree.on_reveal,
    # a module's class, read
    "source": classes.on_source,
    "form": classes.on_form,
    "mro": classes.on_mro,
    "catalog": classes.on_catalog,
    "asset": classes.on_asset,
    # patches
    "edit": patch.on_edit,
    "replace": patch.on_replace,
    "undo": patch.on_undo,
    "redo": patch.on_redo,
    # the Probe tab
    "probe": probe.on_probe,
    "probe_table": probe.on_probe_table,
    "cancel": probe.on_cancel,
    "summary": summary.on_summary,
    # selection, compare and health
    "pick": compare.on_pick,
    "plan": compare.on_plan,
    "bulk": compare.on_bulk,
    "peft": compare.on_peft,
    "diff": compare.on_diff,
    "stats": compare.on_stats,
    "health": compare.on_health,
    # the Memory tab
    "memory": memory.on_memory,
    "figures": memory.on_figures,
    # the execution flow: the call tree and the Graph tab
    "flow": flow.on_flow,
    "graph": flow.on_graph,
    # the Compile tab
    "compile": compile_.on_compile,
    # the Ranks tab
    "ranks": ranks.on_ranks,
    "ranks_plan": ranks.on_ranks_plan,
    # the Training tab
    "train_series": watch.on_train_series,
    "train_control": watch.on_train_control,
    "train_figures": watch.on_train_figures,
    # the Export tab
    "export": export.on_export,
    "train_poll": attach.on_train_poll,
}
