"""The Probe tab's requests (listed in ``_view/handlers.py``): run the probe again (in another
mode), page through its table, and cancel the probe running in the background.

In a kernel the widget runs every probe in a background thread (`_view/background.py`): while it
answers a request, the session's schedule (`_view/schedule.py`) has ``run_probe`` leave the probe
pending and the reply says "probing…"; ``cancel`` is answered at once, as the probe runs in another
thread.
"""

from __future__ import annotations

from ..protocol import CancelRequest, ProbeRequest, ProbeTableRequest
from . import probe_panes
from .host import NONE, PROBE, Host, States
from .replies import CancelReply, ProbeReply, ProbeTableReply

__all__ = ["on_cancel", "on_probe", "on_probe_table"]


def on_probe(host: Host, req: ProbeRequest) -> tuple[ProbeReply, States]:
    host.run_probe(req["mode"])
    return {"kind": "probe", **host.probe_summary()}, PROBE


def on_probe_table(host: Host, req: ProbeTableRequest) -> tuple[ProbeTableReply, States]:
    if host.report is None:
        raise ValueError(host.probe_note or "no probe has run yet")
    offset, limit = req["offset"], req["limit"]
    return probe_panes.probe_table(host.report, host.previous, offset, limit, host.rev), NONE


def on_cancel(host: Host, req: CancelRequest) -> tuple[CancelReply, States]:
    # The state changes when the probe's thread stops and says so (`widget.py`), not here.
    return {"kind": "cancel", "running": host.cancel()}, NONE
