"""The requests that read a module's class: its source (with a call site's line marked), its
constructor form (or a catalog class's, prefilled from the module), its MRO graph, the catalog of
classes to replace it with, and the graph renderer's code (listed in ``_view/handlers.py``).

None of them changes the model; ``imported`` is also how "replace" and "bulk" resolve a class
name.
"""

from __future__ import annotations

import sys
from typing import Any

from ..catalog import catalog, resolve
from ..forms import form
from ..mro import mro_class, mro_classes, mro_graph
from ..protocol import AssetRequest, CatalogRequest, FormRequest, MroRequest, SourceRequest
from ..source import source
from . import assets, panes
from .highlight import highlight
from .host import NONE, Host, States
from .replies import AssetReply, CatalogReply, FormReply, MroReply, SourceReply

__all__ = ["imported", "on_asset", "on_catalog", "on_form", "on_mro", "on_source"]


def imported(host: Host, qualname: str) -> type:
    """The class ``qualname`` names, from a package the kernel has already imported."""
    # A message must not make the kernel import a package it has not imported (importing runs
    # that package's code: `antigravity` opens a browser). The catalog offers only classes of
    # imported packages, so a request that names another one did not come from it.
    top = qualname.split(".", 1)[0]
    if top not in sys.modules:
        raise ValueError(
            f"{qualname!r}: package {top!r} is not imported in this kernel; import it in a "
            "cell first (or tx.register(cls)), then choose the class again"
        )
    return resolve(qualname, host.live_model())


def on_source(host: Host, req: SourceRequest) -> tuple[SourceReply, States]:
    module = host.module(req["path"])
    cls = req["cls"]
    target: Any = mro_class(module, cls) if cls else module
    src = source(target)
    return panes.source_dict(src, highlight(src, req["line"]), req["line"], req["what"]), NONE


def on_form(host: Host, req: FormRequest) -> tuple[FormReply, States]:
    cls, prefill = req["cls"], req["prefill"]
    if cls:
        reply = panes.form_dict(form(imported(host, cls)), prefill or "", host.rev)
        if prefill is not None:
            _prefill(reply, host.form(host.module(prefill)))
        return reply, NONE
    node = host.tree[req["path"] or ""]
    module = host.tree.module(node.path)
    return panes.form_dict(
        host.form(module), node.path, host.rev, node.aliases, host.patch_refusal
    ), NONE


def _prefill(reply: FormReply, old: Any) -> None:
    """Prefill a new class's form from the old module's values where parameter names match."""
    old_fields = {f.name: f for f in old.fields}
    for field in reply["fields"]:
        match = old_fields.get(field["name"])
        if match is not None and field["kind"] not in ("varargs", "varkw"):
            field["text"] = match.text
            field["origin"] = (
                "prefilled" if match.origin in ("attribute", "recorded") else match.origin
            )


def on_mro(host: Host, req: MroRequest) -> tuple[MroReply, States]:
    module = host.module(req["path"])
    return panes.mro_dict(mro_classes(module), mro_graph(module).source), NONE


def on_catalog(host: Host, req: CatalogRequest) -> tuple[CatalogReply, States]:
    like = host.module(req["path"]) if req["path"] is not None else None
    entries = panes.catalog_list(catalog(req["query"], host.live_model(), like=like))
    return {"kind": "catalog", "entries": entries}, NONE


def on_asset(host: Host, req: AssetRequest) -> tuple[AssetReply, States]:
    return {"kind": "asset", "name": "viz", "code": assets.read("viz.js")}, NONE
