"""The Export tab's request (listed in ``_view/handlers.py``): ``export`` runs
``tx.export_check`` on the explorer's model and example inputs for the targets asked for. It runs
only when asked: a patch marks the last check stale (``Session.changed``), and the next one says
what changed since (`export_view.changes`)."""

from __future__ import annotations

from .export_types import ExportReply, ExportRequest
from .host import EXPORT, Host, States

__all__ = ["on_export"]


def on_export(host: Host, req: ExportRequest) -> tuple[ExportReply, States]:
    targets = req.get("targets") or None
    host.run_export({"targets": tuple(targets)} if targets else None)
    return {"kind": "export", **host.export_state()}, EXPORT
