"""The Form tab's and History's requests that patch the model (listed in ``_view/handlers.py``):
``edit`` (Apply), ``replace`` (Replace with...), ``undo``, ``redo``. Each goes through
``Session.patch`` (the model as opened is kept first, then a new walk and probe) and changes
every synced state."""

from __future__ import annotations

from typing import Any

from ..forms import FormError, form
from ..protocol import EditRequest, RedoRequest, ReplaceRequest, UndoRequest
from .host import ALL, Host, States
from .replies import PatchedReply
from .tools_classes import imported

__all__ = ["on_edit", "on_redo", "on_replace", "on_undo"]


def _patched(host: Host, op: str, *args: Any, **kwargs: Any) -> tuple[PatchedReply, States]:
    entry = host.patch(op, *args, **kwargs)
    return {"kind": "patched", "id": entry.id, "rev": host.rev}, ALL


def on_edit(host: Host, req: EditRequest) -> tuple[PatchedReply, States]:
    path = host.tree[req["path"]].path
    changes = req["changes"]
    if not changes:
        raise ValueError("nothing to apply: no field was changed")
    # The log's form (``Host.form``): the tab's, and the one the edit's plan reads below.
    errors = host.form(host.tree.module(path)).validate(**changes)
    if errors:
        raise FormError(errors)
    # Too large a module raises TooLarge, a FormError under "__confirm__": the form shows the
    # estimate with a "Build anyway" button, which sends the edit again with confirm. An inexact
    # edit raises Inexact under "__inexact__": "Apply anyway" sends it with inexact_ok.
    return _patched(
        host, "edit", path, _confirm=req["confirm"], _inexact_ok=req["inexact_ok"], **changes
    )


def on_replace(host: Host, req: ReplaceRequest) -> tuple[PatchedReply, States]:
    path = host.tree[req["path"]].path
    new = form(imported(host, req["cls"])).build(**req["changes"])
    return _patched(host, "replace", path, new, which=req["which"])


def on_undo(host: Host, req: UndoRequest) -> tuple[PatchedReply, States]:
    return _patched(host, "undo")


def on_redo(host: Host, req: RedoRequest) -> tuple[PatchedReply, States]:
    return _patched(host, "redo")
