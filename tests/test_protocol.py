"""protocol.validate: every request kind, defaults, and the malformed messages it must refuse."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchxray.protocol import MAX_MESSAGE_BYTES, REQUESTS, ProtocolError, error_reply, validate


def test_defaults_are_filled_in() -> None:
    req = validate({"kind": "children", "path": "a.b"})
    assert req == {"kind": "children", "path": "a.b", "offset": 0, "limit": 0, "unfold": False}
    assert validate({"kind": "replace", "path": "x", "cls": "torch.nn.ReLU"})["which"] == "all"
    assert validate({"kind": "probe"})["mode"] is None


def test_defaults_are_not_shared_between_requests() -> None:
    a = validate({"kind": "replace", "path": "x", "cls": "C"})
    a["changes"]["k"] = "v"
    assert validate({"kind": "replace", "path": "x", "cls": "C"})["changes"] == {}


@pytest.mark.parametrize(
    ("msg", "needle"),
    [
        (None, "must be an object"),
        ([1, 2], "must be an object"),
        ({}, "unknown request kind None"),
        ({"kind": "drop_tables"}, "unknown request kind 'drop_tables'"),
        ({"kind": 5}, "unknown request kind 5"),
        ({"kind": "select"}, "missing field 'path'"),
        ({"kind": "select", "path": 3}, "'path' must be a string, got int"),
        ({"kind": "select", "path": None}, "'path' must be a string, got null"),
        ({"kind": "select", "path": "a", "extra": 1}, "unexpected field(s) 'extra'"),
        ({"kind": "children", "path": "", "offset": -1}, "between 0 and"),
        ({"kind": "children", "path": "", "offset": True}, "must be an integer, got bool"),
        ({"kind": "children", "path": "", "unfold": "yes"}, "must be true or false"),
        ({"kind": "edit", "path": "a", "changes": ["x"]}, "must be an object of field -> text"),
        ({"kind": "edit", "path": "a", "changes": {"k": 3}}, "must be the field's text, got int"),
        ({"kind": "edit", "path": "a", "changes": {}, "rev": "1"}, "must be an integer"),
        (
            {"kind": "replace", "path": "a", "cls": "C", "which": "some"},
            "must be one of 'all', 'this'",
        ),
        ({"kind": "probe", "mode": "turbo"}, "must be one of 'fake', 'real'"),
        ({"kind": "asset", "name": "../../etc/passwd"}, "must be one of 'viz'"),
        ({"kind": "filter", "query": "x" * 5000}, "too long"),
        ({"kind": "filter", "query": float("nan")}, "must be a string"),
    ],
)
def test_malformed_requests_are_refused_with_a_reason(msg: object, needle: str) -> None:
    with pytest.raises(ProtocolError, match=re.escape(needle)):
        validate(msg)


def test_oversized_and_non_json_messages() -> None:
    big = {"kind": "edit", "path": "a", "changes": {f"f{i}": "x" * 300 for i in range(250)}}
    with pytest.raises(ProtocolError, match=f"exceeds {MAX_MESSAGE_BYTES}"):
        validate(big)
    with pytest.raises(ProtocolError, match="not plain JSON"):
        validate({"kind": "select", "path": object()})


def test_every_kind_accepts_its_minimal_request() -> None:
    samples = {"str": "x", "str?": None, "int?": None, "changes": {}}
    for kind, spec in REQUESTS.items():
        msg: dict[str, object] = {"kind": kind}
        for name, (typ, required, _default) in spec.items():
            if required:
                msg[name] = typ[0] if isinstance(typ, tuple) else samples.get(typ, "x")
        assert validate(msg)["kind"] == kind


def test_error_reply_shape() -> None:
    assert error_reply("bad") == {"kind": "error", "message": "bad"}
    assert error_reply("bad", {"a": "m"}, "edit") == {
        "kind": "error",
        "message": "bad",
        "fields": {"a": "m"},
        "request": "edit",
    }


def test_the_frontend_sends_exactly_the_kinds_the_kernel_knows() -> None:
    # js/ is the other half of this protocol: a kind renamed on one side only would be answered
    # "unknown request kind" at run time, so check the mirror here.
    js = Path(__file__).parents[1] / "js"
    sent = re.compile(r'\.(?:call|submit)(?:<[^(]*?>)?\([^{]*?\{\s*kind:\s*"(\w+)"', re.S)
    kinds: set[str] = set()
    for path in js.rglob("*.ts"):
        if "node_modules" in path.parts or path.name.endswith(".test.ts"):
            continue
        if path.name == "fake_model.ts":
            continue
        kinds |= set(sent.findall(path.read_text(encoding="utf-8")))
    assert kinds == set(REQUESTS)
