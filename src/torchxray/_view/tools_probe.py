"""The Probe tab's requests: run the probe again (in another mode), page through its table, and
cancel the probe running in the background. ``session.py`` registers ``HANDLERS`` into its table.

In a kernel the widget runs every probe in a background thread (`_view/background.py`): the
session's ``defer`` is set while it answers a request, so ``run_probe`` leaves the probe pending
and the reply says "probing…"; ``cancel`` is answered at once, as the probe runs in another thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import panes

if TYPE_CHECKING:
    from ..protocol import CancelRequest, ProbeRequest, ProbeTableRequest
    from .replies import CancelReply, ProbeReply, ProbeSummary, ProbeTableReply, Reply

__all__ = ["HANDLERS"]

NONE: frozenset[str] = frozenset()
PROBE = frozenset({"tree", "overview", "probe"})


def on_probe(s: Any, req: ProbeRequest) -> tuple[ProbeReply, frozenset[str]]:
    s.run_probe(req["mode"])
    summary: ProbeSummary = s.probe_summary()
    return {"kind": "probe", **summary}, PROBE


def on_probe_table(s: Any, req: ProbeTableRequest) -> tuple[ProbeTableReply, frozenset[str]]:
    if s.report is None:
        raise ValueError(s.probe_note or "no probe has run yet")
    offset, limit = req["offset"], req["limit"]
    return panes.probe_table(s.report, s.previous, offset, limit, s.rev), NONE


def on_cancel(s: Any, req: CancelRequest) -> tuple[CancelReply, frozenset[str]]:
    # The state changes when the probe's thread stops and says so (`widget.py`), not here.
    return {"kind": "cancel", "running": s.cancel()}, NONE


HANDLERS: dict[str, Callable[[Any, Any], tuple[Reply, frozenset[str]]]] = {
    "probe": on_probe,
    "probe_table": on_probe_table,
    "cancel": on_cancel,
}
