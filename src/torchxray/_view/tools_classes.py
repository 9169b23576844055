"""The requests that read a module's class: its source (with a call site's line marked), its
constructor form (or a catalog class's, prefilled from the module), its MRO graph, the catalog of
classes to replace it with, and the graph renderer's code. ``session.py`` registers ``HANDLERS``.

None of them changes the model; ``imported`` is also what the session's "replace" resolves a class
name with.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..catalog import catalog, resolve
from ..forms import form
from ..mro import mro_class, mro_classes, mro_graph
from ..source import source
from . import assets, panes
from .highlight import highlight

if TYPE_CHECKING:
    from ..protocol import AssetRequest, CatalogRequest, FormRequest, MroRequest, SourceRequest
    from .replies import AssetReply, CatalogReply, FormReply, MroReply, Reply, SourceReply

__all__ = ["HANDLERS", "imported"]

NONE: frozenset[str] = frozenset()


def imported(s: Any, qualname: str) -> type:
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
    return resolve(qualname, s._model())


def on_source(s: Any, req: SourceRequest) -> tuple[SourceReply, frozenset[str]]:
    module = s._module(req["path"])
    cls = req["cls"]
    target: Any = mro_class(module, cls) if cls else module
    src = source(target)
    return panes.source_dict(src, highlight(src, req["line"]), req["line"]), NONE


def on_form(s: Any, req: FormRequest) -> tuple[FormReply, frozenset[str]]:
    cls, prefill = req["cls"], req["prefill"]
    if cls:
        reply = panes.form_dict(form(imported(s, cls)), prefill or "", s.rev)
        if prefill is not None:
            _prefill(reply, form(s._module(prefill)))
        return reply, NONE
    node = s.tree[req["path"] or ""]
    module = s.tree.module(node.path)
    refusal = s.patch_refusal or ""
    return panes.form_dict(form(module), node.path, s.rev, node.aliases, refusal), NONE


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


def on_mro(s: Any, req: MroRequest) -> tuple[MroReply, frozenset[str]]:
    module = s._module(req["path"])
    return panes.mro_dict(mro_classes(module), mro_graph(module).source), NONE


def on_catalog(s: Any, req: CatalogRequest) -> tuple[CatalogReply, frozenset[str]]:
    like = s._module(req["path"]) if req["path"] is not None else None
    entries = panes.catalog_list(catalog(req["query"], s._model(), like=like))
    return {"kind": "catalog", "entries": entries}, NONE


def on_asset(s: Any, req: AssetRequest) -> tuple[AssetReply, frozenset[str]]:
    return {"kind": "asset", "name": "viz", "code": assets.read("viz.js")}, NONE


HANDLERS: dict[str, Callable[[Any, Any], tuple[Reply, frozenset[str]]]] = {
    "source": on_source,
    "form": on_form,
    "mro": on_mro,
    "catalog": on_catalog,
    "asset": on_asset,
}
