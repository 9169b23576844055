"""Pane data for the widget (overview, source, form, MRO, catalog, history) as JSON-able dicts,
in the shapes ``replies.py`` declares (and ``js/protocol_gen.ts`` is generated from), and the
shapes as text. The tree's rows and pages are in ``serialize.py``, the probe's summary and table
in ``probe_panes.py``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Container, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._signature import resolve
from .._text import short

if TYPE_CHECKING:
    from ..catalog import CatalogEntry
    from ..forms import Form
    from ..mro import ClassInfo
    from ..patch import PatchLog
    from ..probe import ModuleRecord, ProbeReport, TensorInfo
    from ..source import Source
    from ..tree import Node
    from .flow_types import SiteRow
    from .replies import (
        BufferRow,
        CatalogRow,
        FormField,
        FormReply,
        HistoryEntry,
        HistoryState,
        MroReply,
        Overview,
        SourceReply,
    )

__all__ = [
    "MAX_WRITES",
    "catalog_list",
    "form_dict",
    "history_dict",
    "write_lines",
    "forward_params",
    "leaves_text",
    "mro_dict",
    "overview",
    "output_parts",
    "outputs_text",
    "shape_text",
    "source_dict",
]

MAX_TEXT = 2000


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return short(text, limit, "…")


def shape_text(shapes: Iterable[Sequence[int]]) -> str:
    """``((1, 64, 8, 8),)`` -> ``"1×64×8×8"``; several tensors are joined with ", "."""
    parts = ["×".join(map(str, s)) if len(s) else "scalar" for s in shapes]
    return _clip(", ".join(parts), 120)


def _dims(shape: Sequence[int]) -> str:
    return "×".join(map(str, shape)) if len(shape) else "scalar"


def output_parts(leaves: Iterable[TensorInfo | str]) -> list[str]:
    """Each output tensor as "name: shape", named by where it sat in what the module returned
    ("logits: 1×8×100", "cache.self_attention_cache[0].keys: 1×4×8×8", "[1]: 2×3"); a lone
    tensor returned as is is its shape alone. Non-tensor leaves (None, ints) are left out."""
    tensors = [leaf for leaf in leaves if not isinstance(leaf, str)]
    if len(tensors) == 1 and not tensors[0].name:
        return [_dims(tensors[0].shape)]
    return [
        f"{t.name.lstrip('.')}: {_dims(t.shape)}" if t.name else _dims(t.shape) for t in tensors
    ]


def outputs_text(leaves: Iterable[TensorInfo | str], limit: int = 600) -> str:
    """All of `output_parts`, joined with ", " (the Probe table's "output" column)."""
    return _clip(", ".join(output_parts(leaves)), limit)


def leaves_text(
    leaves: Iterable[TensorInfo | str], params: Sequence[str] | None = None, named: bool = False
) -> str:
    """Leaves as text; with ``params`` (the forward's parameter names), each tensor is labelled
    by the argument it sat in: ``hidden_states: 2×8×64 float32`` for ``args[0]``; ``named``
    (outputs), by where it sat in what was returned: ``logits: 1×8×100 float32``."""
    out = []
    for leaf in leaves:
        if isinstance(leaf, str):
            out.append(leaf)
        else:
            dims = "×".join(map(str, leaf.shape)) if leaf.shape else "scalar"
            text = f"{dims} {leaf.dtype}" + (f" {leaf.device}" if leaf.device != "cpu" else "")
            if params is not None:
                label = _argument(leaf.name, params)
            else:
                label = leaf.name.lstrip(".") if named else ""
            out.append(f"{label}: {text}" if label else text)
    return _clip(", ".join(out), 300)


_WHERE = re.compile(r"^(?:args\[(\d+)\]|kwargs\[(['\"])(.+?)\2\])(.*)$")


def _argument(where: str, params: Sequence[str]) -> str:
    """ "args[0]" -> the first parameter's name, "kwargs['mask'][1]" -> "mask[1]"; a position past
    the named parameters (``*args``) keeps "args[i]"."""
    m = _WHERE.match(where or "")
    if m is None:
        return where or ""
    index, _, key, rest = m.groups()
    if key is not None:
        return key + rest
    i = int(index)
    return (params[i] if i < len(params) else f"args[{i}]") + rest


def forward_params(module: Any) -> list[str]:
    """Names of the parameters ``forward`` takes positionally, in order (``self`` excluded)."""
    try:
        sig = resolve(module.forward)  # through wrappers (`torchxray._signature`)
    except (TypeError, ValueError, AttributeError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


MAX_WRITES = 50  # writes listed on one Overview


def write_lines(report: ProbeReport | None, path: str, modules: Container[str]) -> list[str]:
    """Each write of the last probe at ``path``, as a sentence (``str(Write)``); the root's also
    lists those no module holds (torch's flags, a registry, a file, a path not in ``modules``)."""
    if report is None:
        return []
    out = []
    for w in report.writes:
        if (w.path == path and not w.outside) or (
            path == "" and (w.outside or w.path not in modules)
        ):
            out.append(_clip(str(w), 300))
    return out[:MAX_WRITES]


def overview(
    node: Node,
    record: ModuleRecord | None,
    not_called: str | None = None,
    params: Sequence[str] | None = None,
    sites: Sequence[SiteRow] = (),
    writes: Sequence[str] = (),
) -> Overview:
    """``params``: the forward's positional parameter names (``forward_params``), which label the
    inputs by argument; ``sites``: where the last probe saw it called from; ``writes``: what its
    forward wrote (``write_lines``)."""
    out: Overview = {
        "path": node.path,
        "name": node.name,
        "cls": node.cls,
        "qualname": node.qualname,
        "params_own": node.params_own,
        "params_total": node.params_total,
        "trainable_total": node.trainable_total,
        "bytes_total": node.bytes_total,
        "bytes_local": node.bytes_local,
        "placement": node.placement,
        "devices": list(node.devices),
        "dtypes": list(node.dtypes),
        "training": node.training,
        "hooks": [{"kind": h.kind, "name": _clip(str(h.name), 200)} for h in node.hooks],
        "aliases": list(node.aliases),
        "container": node.container,
        "parametrizations": list(getattr(node, "parametrizations", ())),
        "wraps": getattr(node, "wraps", None),
        "forward_patched": node.forward_patched,
        "is_custom": node.is_custom,
        "extra_repr": _clip(node.extra_repr),
        "nkids": len(node.children),
        "buffers": [_buffer(b) for b in getattr(node, "buffers", ())][:50],
        "probe": None,
        "not_called": not_called,
        "sites": list(sites),
    }
    if writes:
        out["writes"] = list(writes)
    if record is not None:
        out["probe"] = {
            "calls": record.calls,
            "inputs": leaves_text(record.inputs, params),
            "outputs": leaves_text(record.outputs, named=True),
            "flops": record.flops,
            "time_ms": record.time_ms,
            "mem_alloc": record.mem_alloc,
            "mem_peak": record.mem_peak,
            "contract": list(record.contract),
        }
    return out


def _buffer(b: Any) -> BufferRow:
    shape = getattr(b, "shape", ())
    return {
        "name": str(getattr(b, "name", "?")),
        "shape": "×".join(map(str, shape)) if shape else "scalar",
        "dtype": str(getattr(b, "dtype", "")),
    }


def source_dict(src: Source, html: str, line: int | None = None, what: str = "call") -> SourceReply:
    """``line``: the line asked to be marked (a call site, or a graph break: ``what``); the note
    says whether it is shown."""
    note = src.note
    if line is not None and src.text is not None:
        first, last = src.line or 1, (src.line or 1) + len(src.text.splitlines()) - 1
        said = f"line {line} (the {'graph break' if what == 'break' else 'call'}) is marked"
        if not first <= line <= last:
            said = f"line {line} is not in this source (lines {first}–{last})"
        note = f"{note}; {said}" if note else said
    return {
        "kind": "source",
        "html": html if src.text is not None else None,
        "file": src.file,
        "line": src.line,
        "reason": src.reason,
        "qualname": src.qualname,
        "forward_lines": src.forward_lines or None,
        "note": note,
        "cell": src.cell,
    }


def form_dict(
    form: Form, path: str, rev: int, aliases: Sequence[str] = (), refusal: str = ""
) -> FormReply:
    fields: list[FormField] = []
    for f in form.fields:
        default = f.default
        fields.append(
            {
                "name": f.name,
                "kind": f.kind,
                "text": _clip(f.text, 4000),
                "default": None if default is None else _clip(repr(default), 200),
                "required": f.required,
                "choices": [str(c) for c in f.choices],
                "origin": f.origin,
                "annotation": _clip(f.annotation, 200),
                "optional": f.optional,
                "group": f.group,
                "read": f.read,
                "note": _clip(f.note, 400),
            }
        )
    return {
        "kind": "form",
        "path": path,
        "cls": form.cls.__name__,
        "qualname": f"{form.cls.__module__}.{form.cls.__qualname__}",
        "fields": fields,
        "rev": rev,
        "aliases": list(aliases),
        "hint": _clip(form.hint, 1000),
        "inexact": _clip(form.inexact, 1000),
        "refusal": _clip(refusal, 400),
    }


def mro_dict(classes: Sequence[ClassInfo], dot: str) -> MroReply:
    return {
        "kind": "mro",
        "dot": dot,
        "classes": [
            {
                "name": c.name,
                "qualname": c.qualname,
                "module": c.module,
                "group": c.group,
                "defines": list(c.defines),
                "node": c.node_id,
            }
            for c in classes
        ],
    }


def catalog_list(entries: Sequence[CatalogEntry], limit: int = 200) -> list[CatalogRow]:
    return [
        {"name": e.name, "qualname": e.qualname, "group": e.group, "doc": _clip(e.doc, 300)}
        for e in entries[:limit]
    ]


def history_dict(log: PatchLog) -> HistoryState:
    entries: list[HistoryEntry] = []
    for e in log.entries:
        entries.append(
            {
                "id": e.id,
                "op": e.op,
                "paths": list(e.paths)[:20],
                "old_cls": e.old_cls,
                "new_cls": e.new_cls,
                "changes": {k: _clip(f"{v[0]!r} → {v[1]!r}", 200) for k, v in e.changes.items()},
                "code": _clip(e.code, 4000),
            }
        )
    return {
        "entries": entries,
        "can_undo": log.can_undo,
        "can_redo": log.can_redo,
        # The replay helpers' header alone is noise: no entries, no code.
        "code": log.to_code() if entries else "",
    }
