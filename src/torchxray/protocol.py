"""Messages between the Explorer widget's frontend and the kernel: the one declaration of the
contract. ``js/protocol_gen.ts`` is generated from this file (``make js`` runs
``python -m torchxray._view.protocol_ts``), and a test fails when the committed copy is stale.

Every request and reply is a dict with a ``kind``. Each request kind is one TypedDict below; a
field that may be left out is ``NotRequired[Annotated[type, default]]``. ``REQUESTS`` (the field
specs the validator reads) is derived from them, ``REPLIES`` names the reply each kind gets, and
``SLOW`` the kinds that patch the model or re-run the probe.

``validate`` checks an incoming request (known kind, field types, sizes) and returns it with
defaults filled in, or raises ``ProtocolError``; the widget turns that into an ``{"kind": "error"}``
reply, so a malformed message never raises in the kernel and never touches the model.

    >>> validate({"kind": "children", "path": "layer1"})["limit"]
    0
    >>> validate({"kind": "select", "path": 3})
    Traceback (most recent call last):
    ...
    torchxray.protocol.ProtocolError: select: 'path' must be a string, got int
    >>> REQUESTS["replace"]["which"]  # (type, required, default)
    (('all', 'this'), False, 'all')
    >>> REPLIES["undo"].__name__, sorted(SLOW)
    ('PatchedReply', ['bulk', 'compile', 'edit', 'export', 'memory', 'probe', 'ranks_plan', 'redo', 'replace', 'undo'])
"""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
import json
import types
from typing import Annotated, Any, Literal, TypeAlias, Union, cast, get_args, get_origin

from typing_extensions import NotRequired, TypedDict, get_type_hints

from ._view import compare_types as ct
from ._view import compile_types as cpt
from ._view import export_types as xt
from ._view import flow_types as ft
from ._view import ranks_types as rkt
from ._view import replies as rp
from ._view import summary_types as st
from ._view.replies import ErrorReply, Reply
from ._view.watch_types import TRAIN_REPLIES, TrainRequest

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PROBE_MODES",
    "REPLIES",
    "REQUESTS",
    "REQUEST_TYPES",
    "SLOW",
    "SLOW_TIMEOUT_KINDS",
    "ErrorReply",
    "ProbeMode",
    "ProtocolError",
    "Reply",
    "Request",
    "error_reply",
    "validate",
]

MAX_MESSAGE_BYTES = 64 * 1024
MAX_STRING = 4096
MAX_CHANGES = 256
MAX_PATHS = 4096  # a selection of modules; the message size bounds it too
MAX_INT = 10**9


# The one declaration of the probe's modes (the request, the probe_mode traitlet, the session).
ProbeMode: TypeAlias = Literal["fake", "real"]
PROBE_MODES: tuple[str, ...] = get_args(ProbeMode)


class ProtocolError(ValueError):
    """A request that does not fit the protocol (unknown kind, wrong type, too large)."""


# -- requests -----------------------------------------------------------------------------------


class PingRequest(TypedDict):
    kind: Literal["ping"]


class SelectRequest(TypedDict):
    kind: Literal["select"]
    path: str


class ChildrenRequest(TypedDict):
    kind: Literal["children"]
    path: str
    offset: NotRequired[Annotated[int, 0]]
    limit: NotRequired[Annotated[int, 0]]
    unfold: NotRequired[Annotated[bool, False]]


class FilterRequest(TypedDict):
    kind: Literal["filter"]
    query: str
    regex: NotRequired[Annotated[bool, False]]
    # Match each module's own name only (not its path, not its class): "attn" then leaves out
    # the children of every attention, whose paths contain it.
    names: NotRequired[Annotated[bool, False]]
    # The tree folded to the modules whose own forward graph-breaks in the last compile check
    # (the Compile tab); `query` is then not read.
    breaks: NotRequired[Annotated[bool, False]]


class RevealRequest(TypedDict):
    kind: Literal["reveal"]
    path: str


class SourceRequest(TypedDict):
    kind: Literal["source"]
    path: str
    cls: NotRequired[Annotated[str | None, None]]  # a class of the module's MRO
    line: NotRequired[Annotated[int | None, None]]  # a line to highlight (a call site), not forward
    what: NotRequired[Annotated[Literal["call", "break"], "call"]]  # a call or a graph break


class FormRequest(TypedDict):
    kind: Literal["form"]
    path: NotRequired[Annotated[str | None, None]]
    cls: NotRequired[Annotated[str | None, None]]  # a catalog class instead of the module
    prefill: NotRequired[Annotated[str | None, None]]  # path whose values prefill cls's form


class EditRequest(TypedDict):
    kind: Literal["edit"]
    path: str
    changes: dict[str, str]  # field -> the text typed into it
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale
    # Build even when the rebuilt module's parameters pass the size limit (the person confirmed
    # the "__confirm__" message of an earlier reply).
    confirm: NotRequired[Annotated[bool, False]]
    # Apply even though the edit would change parts it does not name (an inexact form: the person
    # read the "__inexact__" message of an earlier reply and chose "Apply anyway").
    inexact_ok: NotRequired[Annotated[bool, False]]


class ReplaceRequest(TypedDict):
    kind: Literal["replace"]
    path: str
    cls: str
    changes: NotRequired[Annotated[dict[str, str], {}]]
    which: NotRequired[Annotated[Literal["all", "this"], "all"]]
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale


class UndoRequest(TypedDict):
    kind: Literal["undo"]
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale


class RedoRequest(TypedDict):
    kind: Literal["redo"]
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale


class ProbeRequest(TypedDict):
    kind: Literal["probe"]
    mode: NotRequired[Annotated[ProbeMode | None, None]]


class CancelRequest(TypedDict):
    """Stop the probe running in the background (at its next module call)."""

    kind: Literal["cancel"]


class ProbeTableRequest(TypedDict):
    kind: Literal["probe_table"]
    offset: NotRequired[Annotated[int, 0]]
    limit: NotRequired[Annotated[int, 500]]


class MroRequest(TypedDict):
    kind: Literal["mro"]
    path: str


class CatalogRequest(TypedDict):
    kind: Literal["catalog"]
    query: NotRequired[Annotated[str, ""]]
    path: NotRequired[Annotated[str | None, None]]


class AssetRequest(TypedDict):
    kind: Literal["asset"]
    name: Literal["viz"]


class MemoryRequest(TypedDict):
    kind: Literal["memory"]
    path: NotRequired[Annotated[str, ""]]  # the subtree whose bytes the bar shows
    training: NotRequired[Annotated[bool, False]]
    optimizer: NotRequired[Annotated[Literal["adamw", "adam", "sgd", "none"], "adamw"]]
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale


class FiguresRequest(TypedDict):
    kind: Literal["figures"]
    figure: Literal["params", "bytes", "activations", "flops", "time"]
    paths: NotRequired[Annotated[list[str], []]]  # the rows on screen: values come lazily


Request: TypeAlias = (
    PingRequest | SelectRequest | ChildrenRequest | FilterRequest | RevealRequest | SourceRequest |
    FormRequest | EditRequest | ReplaceRequest | UndoRequest | RedoRequest | ProbeRequest |
    ProbeTableRequest | MroRequest | CatalogRequest | AssetRequest | ct.PickRequest |
    ct.PlanRequest | ct.BulkRequest | ct.PeftRequest | ct.DiffRequest | ct.StatsRequest |
    ct.HealthRequest | MemoryRequest | FiguresRequest | ft.FlowRequest | ft.GraphRequest | CancelRequest | st.SummaryRequest | TrainRequest | cpt.CompileRequest |
    rkt.RanksRequest | rkt.RanksPlanRequest | xt.ExportRequest
)  # fmt: skip
REQUEST_TYPES: dict[str, type] = {get_args(t.__annotations__["kind"])[0]: t for t in get_args(Request)}  # fmt: skip

# Requests that patch the model, re-run the probe, run a fake training step (memory) or a compile
# check (which probes, then traces every distinct module with dynamo) or plan the ranks again (a
# dry run in a forked process): busy in the widget, a stale `rev` refused; the frontend waits
# longer for them and the graph renderer (1.4 MB).
SLOW = frozenset({"edit", "replace", "undo", "redo", "probe", "memory", "bulk", "compile", "ranks_plan", "export"})  # fmt: skip
SLOW_TIMEOUT_KINDS = SLOW | {"diff", "asset"}

# The reply each request kind gets when it succeeds (any kind may get an ErrorReply instead).
REPLIES: dict[str, type] = {
    "ping": rp.PongReply,
    "select": rp.SelectReply,
    "children": rp.ChildrenReply,
    "filter": rp.FilterReply,
    "reveal": rp.RevealReply,
    "source": rp.SourceReply,
    "form": rp.FormReply,
    "edit": rp.PatchedReply,
    "replace": rp.PatchedReply,
    "undo": rp.PatchedReply,
    "redo": rp.PatchedReply,
    "probe": rp.ProbeReply,
    "probe_table": rp.ProbeTableReply,
    "summary": st.SummaryReply,
    "cancel": rp.CancelReply,
    "mro": rp.MroReply,
    "catalog": rp.CatalogReply,
    "asset": rp.AssetReply,
    "pick": ct.PickReply,
    "plan": ct.PlanReply,
    "bulk": rp.PatchedReply,
    "peft": ct.PeftReply,
    "diff": ct.DiffReply,
    "stats": ct.StatsReply,
    "health": ct.HealthReply,
    "memory": rp.MemoryReply,
    "figures": rp.FiguresReply,
    "flow": ft.FlowReply,
    "graph": ft.GraphReply,
    "compile": cpt.CompileReply,
    "ranks": rkt.RanksReply,
    "ranks_plan": rkt.RanksPlanReply,
    "export": xt.ExportReply,
    **TRAIN_REPLIES,
}
# -- validation ---------------------------------------------------------------------------------

# Field specs: (type, required, default). "str?" is a string or None, "int?" an int or None,
# "changes" a str -> str dict, "paths" a list of strings; a tuple lists the allowed values.
_Spec = tuple[Any, bool, Any]


def _spec(hint: Any) -> Any:
    args = tuple(a for a in get_args(hint) if a is not type(None))
    optional = len(args) < len(get_args(hint))
    if get_origin(hint) in (Union, types.UnionType) and len(args) == 1:
        inner = _spec(args[0])
        if isinstance(inner, tuple):
            return (*inner, None)
        return {str: "str?", int: "int?"}[inner]
    if get_origin(hint) is Literal:
        return args + ((None,) if optional else ())
    if get_origin(hint) is dict and args == (str, str):
        return "changes"
    if get_origin(hint) is list and args == (str,):
        return "paths"
    if hint in (str, int, bool):
        return hint
    raise TypeError(f"no validator for request field type {hint!r}")  # pragma: no cover


def _fields(cls: type) -> dict[str, _Spec]:
    out: dict[str, _Spec] = {}
    for name, hint in get_type_hints(cls, include_extras=True).items():
        if name == "kind":
            continue
        required = name in cls.__required_keys__  # type: ignore[attr-defined]
        if get_origin(hint) is NotRequired:
            hint = get_args(hint)[0]
        default = None
        if get_origin(hint) is Annotated:
            hint, default = get_args(hint)[:2]
        out[name] = (_spec(hint), required, default)
    return out


REQUESTS: dict[str, dict[str, _Spec]] = {kind: _fields(t) for kind, t in REQUEST_TYPES.items()}


def error_reply(
    message: str, fields: dict[str, str] | None = None, request: str = ""
) -> ErrorReply:
    reply: ErrorReply = {"kind": "error", "message": message}
    if fields:
        reply["fields"] = dict(fields)
    if request:
        reply["request"] = request
    return reply


def validate(msg: Any) -> Request:
    """The request with defaults filled in; raises ``ProtocolError`` naming what is wrong."""
    if not isinstance(msg, dict):
        raise ProtocolError(f"a request must be an object with a 'kind', got {type(msg).__name__}")
    kind = msg.get("kind")
    if not isinstance(kind, str) or kind not in REQUESTS:
        known = ", ".join(sorted(REQUESTS))
        raise ProtocolError(f"unknown request kind {kind!r}; expected one of: {known}")
    try:
        size = len(json.dumps(msg))
    except (TypeError, ValueError, RecursionError) as e:
        raise ProtocolError(f"{kind}: the request is not plain JSON ({type(e).__name__})") from None
    if size > MAX_MESSAGE_BYTES:
        raise ProtocolError(f"{kind}: request of {size} bytes exceeds {MAX_MESSAGE_BYTES}")
    spec = REQUESTS[kind]
    extra = sorted(set(msg) - set(spec) - {"kind"})
    if extra:
        raise ProtocolError(f"{kind}: unexpected field(s) {', '.join(map(repr, extra))}")
    out: dict[str, Any] = {"kind": kind}
    for name, (typ, required, default) in spec.items():
        if name not in msg:
            if required:
                raise ProtocolError(f"{kind}: missing field {name!r}")
            out[name] = type(default)(default) if isinstance(default, (dict, list)) else default
            continue
        out[name] = _check(kind, name, typ, msg[name])
    # Every field was checked against the TypedDict of `kind`, which mypy cannot follow.
    return cast(Request, out)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check(kind: str, name: str, typ: Any, value: Any) -> Any:
    where = f"{kind}: {name!r}"
    if typ is str or typ == "str?":
        if value is None and typ == "str?":
            return None
        if not isinstance(value, str):
            raise ProtocolError(f"{where} must be a string, got {_type_name(value)}")
        if len(value) > MAX_STRING:
            raise ProtocolError(f"{where} is too long ({len(value)} > {MAX_STRING} characters)")
        return value
    if typ is int or typ == "int?":
        if value is None and typ == "int?":
            return None
        # bool is an int subclass in Python but never a valid count or revision.
        if not isinstance(value, int) or isinstance(value, bool):
            raise ProtocolError(f"{where} must be an integer, got {_type_name(value)}")
        if not 0 <= value <= MAX_INT:
            raise ProtocolError(f"{where} must be between 0 and {MAX_INT}, got {value}")
        return value
    if typ is bool:
        if not isinstance(value, bool):
            raise ProtocolError(f"{where} must be true or false, got {_type_name(value)}")
        return value
    if isinstance(typ, tuple):
        if value not in typ or isinstance(value, bool):
            allowed = ", ".join(repr(t) for t in typ if t is not None)
            raise ProtocolError(f"{where} must be one of {allowed}, got {value!r}"[:300])
        return value
    if typ == "changes":
        if not isinstance(value, dict):
            raise ProtocolError(
                f"{where} must be an object of field -> text, got {_type_name(value)}"
            )
        if len(value) > MAX_CHANGES:
            raise ProtocolError(f"{where} has {len(value)} entries (at most {MAX_CHANGES})")
        for k, v in value.items():
            if not isinstance(v, str):
                raise ProtocolError(f"{where}[{k!r}] must be the field's text, got {_type_name(v)}")
            if len(k) > MAX_STRING or len(v) > MAX_STRING:
                raise ProtocolError(f"{where}[{k[:40]!r}] is too long")
        return dict(value)
    if typ == "paths":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ProtocolError(f"{where} must be a list of strings, got {_type_name(value)}")
        if len(value) > MAX_PATHS:
            raise ProtocolError(f"{where} has {len(value)} entries (at most {MAX_PATHS})")
        if any(len(v) > MAX_STRING for v in value):
            raise ProtocolError(f"{where} holds a string over {MAX_STRING} characters")
        return list(value)
    raise AssertionError(f"bad spec for {where}: {typ!r}")  # pragma: no cover
