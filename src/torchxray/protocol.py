"""Messages between the Explorer widget's frontend and the kernel, mirrored by ``js/protocol.ts``.

Every request and reply is a dict with a ``kind``. ``validate`` checks an incoming request against
``REQUESTS`` (known kind, field types, sizes) and returns it with defaults filled in, or raises
``ProtocolError``; the widget turns that into an ``{"kind": "error"}`` reply, so a malformed
message never raises in the kernel and never touches the model.

    >>> validate({"kind": "children", "path": "layer1"})["limit"]
    0
    >>> validate({"kind": "select", "path": 3})
    Traceback (most recent call last):
    ...
    torchxray.protocol.ProtocolError: select: 'path' must be a string, got int
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypedDict

__all__ = [
    "MAX_MESSAGE_BYTES",
    "REQUESTS",
    "ErrorReply",
    "ProtocolError",
    "Request",
    "error_reply",
    "validate",
]

MAX_MESSAGE_BYTES = 64 * 1024
MAX_STRING = 4096
MAX_CHANGES = 256
MAX_INT = 10**9


class ProtocolError(ValueError):
    """A request that does not fit the protocol (unknown kind, wrong type, too large)."""


class Request(TypedDict, total=False):
    kind: str
    path: str | None
    offset: int
    limit: int
    unfold: bool
    query: str
    regex: bool
    cls: str | None
    prefill: str | None
    changes: dict[str, str]
    which: Literal["all", "this"]
    rev: int | None
    mode: Literal["fake", "real"] | None
    name: Literal["viz"]


class ErrorReply(TypedDict, total=False):
    kind: Literal["error"]
    message: str
    fields: dict[str, str]
    request: str


# Field specs: (type, required, default). "str?" is a string or None; "changes" a str -> str dict;
# a tuple lists the allowed string values.
_Spec = tuple[Any, bool, Any]
REQUESTS: dict[str, dict[str, _Spec]] = {
    "ping": {},
    "select": {"path": (str, True, None)},
    "children": {
        "path": (str, True, None),
        "offset": (int, False, 0),
        "limit": (int, False, 0),
        "unfold": (bool, False, False),
    },
    "filter": {"query": (str, True, None), "regex": (bool, False, False)},
    "reveal": {"path": (str, True, None)},
    "source": {"path": (str, True, None), "cls": ("str?", False, None)},
    "form": {
        "path": ("str?", False, None),
        "cls": ("str?", False, None),
        "prefill": ("str?", False, None),
    },
    "edit": {
        "path": (str, True, None),
        "changes": ("changes", True, None),
        "rev": ("int?", False, None),
    },
    "replace": {
        "path": (str, True, None),
        "cls": (str, True, None),
        "changes": ("changes", False, {}),
        "which": (("all", "this"), False, "all"),
        "rev": ("int?", False, None),
    },
    "undo": {"rev": ("int?", False, None)},
    "redo": {"rev": ("int?", False, None)},
    "probe": {"mode": (("fake", "real", None), False, None)},
    "probe_table": {"offset": (int, False, 0), "limit": (int, False, 500)},
    "mro": {"path": (str, True, None)},
    "catalog": {"query": (str, False, ""), "path": ("str?", False, None)},
    "asset": {"name": (("viz",), True, None)},
}


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
            out[name] = dict(default) if isinstance(default, dict) else default
            continue
        out[name] = _check(kind, name, typ, msg[name])
    return out  # type: ignore[return-value]


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
    raise AssertionError(f"bad spec for {where}: {typ!r}")  # pragma: no cover
