"""Untrusted frontend messages: malformed, oversized and out-of-order requests, fuzzed. None may
raise in the kernel and none may change the model.

The fuzzer is a seeded `random.Random` rather than hypothesis: it needs no extra dependency, every
run sends the same messages (a failure reproduces from its index), and it reaches the handlers'
edges (wrong types, huge sizes, deep nesting, unknown kinds) without a strategy library.
"""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
from traitlets import TraitError

from torchxray.protocol import REQUESTS

from .invariants import assert_untouched, state_fingerprint

_BUNDLE = Path(__file__).resolve().parents[2] / "src" / "torchxray" / "static" / "widget.js"
pytestmark = pytest.mark.skipif(not _BUNDLE.exists(), reason="the frontend is not built (make js)")

KINDS = sorted(REQUESTS)


def _initialised() -> nn.Module:
    m = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(144, 2)
    )
    return m


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON-ish value, biased to the edges handlers get wrong."""
    pick = rng.randrange(14 if depth < 3 else 10)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, 3])
    if pick == 3:
        return rng.choice([0.5, -0.0, float("nan"), float("inf"), 1e308])
    if pick == 4:
        return rng.choice(["", "0", "1", "layer1", "0.weight", "..", "\x00", "🙂" * 3, "a" * 5000])
    if pick == 5:
        return rng.choice(KINDS)
    if pick == 6:
        return rng.choice(
            ["fake", "real", "all", "this", "viz", "torch.nn.Linear", "builtins.eval"]
        )
    if pick == 7:
        return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 40)))
    if pick == 8:
        return rng.choice(
            ["__import__('os').system('true')", "{{7*7}}", "<img src=x onerror=alert(1)>"]
        )
    if pick == 9:
        return rng.randrange(-5, 500)
    if pick in (10, 11):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {str(_value(rng, 3)): _value(rng, depth + 1) for _ in range(rng.randrange(4))}


PATHS = ("", "0", "1", "2", "3", "4", "0.weight", "9", "0.0", "..", "4.bias")


def _typed(rng: random.Random, name: str, typ: Any) -> Any:
    """A value of the field's declared type (so the request passes validation and reaches its
    handler), picked at the edges of that type."""
    if typ is str or typ == "str?":
        if name in ("path", "prefill"):
            return rng.choice(PATHS)
        if name == "cls":
            return rng.choice(["torch.nn.Linear", "torch.nn.ReLU", "Linear", "os.system", "0", ""])
        return rng.choice(["", "Conv", "re:(", "[", "\\", "🙂", "a" * 4096])
    if typ is int or typ == "int?":
        return rng.choice([0, 1, 2, 10**9, 500])
    if typ is bool:
        return rng.choice([True, False])
    if isinstance(typ, tuple):
        return rng.choice([t for t in typ])
    if typ == "changes":
        return {
            rng.choice(["bias", "in_channels", "p", "inplace", "zz"]): rng.choice(
                ["", "0", "-1", "x", "None", "1e9"]
            )
        }
    return _value(rng)


def _message(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.1:
        return _value(rng)  # not even a dict
    kind = rng.choice(KINDS) if roll < 0.85 else _value(rng)
    msg: dict[str, Any] = {"kind": kind}
    spec = REQUESTS.get(kind, {}) if isinstance(kind, str) else {}
    typed = rng.random() < 0.5
    for name, (typ, required, _default) in spec.items():
        if typed and (required or rng.random() < 0.5):
            msg[name] = _typed(rng, name, typ)
        elif rng.random() < 0.7:
            msg[name] = _value(rng)
    if rng.random() < 0.2:
        msg[str(_value(rng, 3))] = _value(rng)
    if kind in ("edit", "replace", "undo", "redo"):
        # Actions that could legitimately change the model get a stale revision: the handler
        # must refuse them without touching anything.
        msg["rev"] = 10**9
    return msg


def _explorer(model: nn.Module) -> Any:
    from torchxray.widget import explore

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return explore(model, torch.randn(1, 3, 8, 8))


def _check_reply(result: Any) -> dict[str, Any]:
    reply, buffers = result
    assert isinstance(reply, dict) and isinstance(reply.get("kind"), str), reply
    assert isinstance(buffers, list)
    json.dumps(reply)  # the reply must travel as JSON (no NaN tricks from echoing input? allowed)
    return reply


@pytest.mark.parametrize("seed", range(4))
def test_fuzzed_requests_never_raise_or_change_the_model(seed: int) -> None:
    model = _initialised()
    ex = _explorer(model)
    before = state_fingerprint(model)
    rng = random.Random(seed)
    try:
        for i in range(300):
            msg = _message(rng)
            reply = _check_reply(ex.rpc(msg, []))
            assert reply["kind"] != "patched", f"message {i} changed the model: {msg!r}"[:500]
            assert_untouched(before, model, f"message {i}: {msg!r}"[:300])
            assert ex.busy == ""
    finally:
        ex.close()


def test_oversized_and_deep_requests() -> None:
    model = _initialised()
    ex = _explorer(model)
    before = state_fingerprint(model)
    deep: Any = "x"
    for _ in range(50_000):
        deep = [deep]
    messages = [
        {"kind": "select", "path": "0" * 1_000_000},
        {"kind": "edit", "path": "0", "changes": {f"f{i}": "1" for i in range(20_000)}},
        {"kind": "filter", "query": "(a+)+$" * 500, "regex": True},
        {"kind": "filter", "query": "(a|aa)*c", "regex": True},
        {"kind": "children", "path": "", "offset": 10**9, "limit": 10**9},
        {"kind": "probe_table", "offset": 0, "limit": 10**9},
        {"kind": "select", "path": deep},
        {"kind": "edit", "path": "0", "changes": {"out_channels": deep}},
        {"kind": "catalog", "query": "\x00" * 4096},
    ]
    try:
        for msg in messages:
            _check_reply(ex.rpc(msg, [b"\x00" * 1024]))
            assert_untouched(before, model, f"oversized {msg['kind']}")
        session = ex._session
        for msg in messages:  # the controller itself promises never to raise, too
            reply, _ = session.handle(msg)
            assert isinstance(reply, dict)
    finally:
        ex.close()


def test_out_of_order_requests() -> None:
    model = _initialised()
    ex = _explorer(model)
    before = state_fingerprint(model)
    try:
        for msg in (
            {"kind": "undo"},
            {"kind": "redo"},
            {"kind": "edit", "path": "0", "changes": {"out_channels": "8"}, "rev": 999},
            {"kind": "edit", "path": "no.such.path", "changes": {"bias": "False"}},
            {"kind": "replace", "path": "2", "cls": "builtins.eval"},
            {"kind": "replace", "path": "2", "cls": "os.system"},
            {"kind": "form", "path": None, "cls": "subprocess.Popen"},
            {"kind": "source", "path": "0", "cls": "99"},
            {"kind": "mro", "path": "9"},
        ):
            reply = _check_reply(ex.rpc(msg, []))
            assert reply["kind"] == "error", (msg, reply)
            assert_untouched(before, model, str(msg))
        # a real edit, then a stale one built against the old revision
        rev = ex.rpc({"kind": "ping"}, [])[0]["rev"]
        ok = _check_reply(
            ex.rpc({"kind": "edit", "path": "2", "changes": {"inplace": "True"}, "rev": rev}, [])
        )
        assert ok["kind"] == "patched", ok
        stale = _check_reply(
            ex.rpc({"kind": "edit", "path": "0", "changes": {"bias": "False"}, "rev": rev}, [])
        )
        assert stale["kind"] == "error" and "stale" in stale["message"]
        assert _check_reply(ex.rpc({"kind": "undo"}, []))["kind"] == "patched"
        assert_untouched(before, model, "edit + stale edit + undo")
    finally:
        ex.close()
    for msg in (
        {"kind": "ping"},
        {"kind": "undo"},
        {"kind": "edit", "path": "0", "changes": {"bias": "False"}},
    ):
        reply = _check_reply(ex.rpc(msg, []))
        assert reply["kind"] == "error" and "closed" in reply["message"]
    assert_untouched(before, model, "requests after close")


def test_malformed_command_envelopes() -> None:
    """What reaches the widget before anywidget's command dispatch: nothing may raise there either."""
    from ipywidgets.widgets.widget import CallbackDispatcher

    class Raising(CallbackDispatcher):  # type: ignore[misc]
        # ipywidgets would log a handler's exception and carry on; re-raise so the test sees it
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            for callback in self.callbacks:
                callback(*args, **kwargs)

    model = _initialised()
    ex = _explorer(model)
    sent: list[Any] = []
    ex.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    ex._msg_callbacks = Raising(callbacks=list(ex._msg_callbacks.callbacks))
    before = state_fingerprint(model)
    rng = random.Random(7)
    envelopes: list[Any] = [
        None, [], "anywidget-command", {"kind": "anywidget-command"},
        {"kind": "anywidget-command", "name": "rpc"},
        {"kind": "anywidget-command", "name": "rpc", "id": "1"},
        {"kind": "anywidget-command", "name": "rpc", "id": 1, "msg": {"kind": "ping"}},
        {"kind": "anywidget-command", "name": "nope", "id": "2", "msg": {}},
        {"kind": "anywidget-command", "name": ["rpc"], "id": "3", "msg": {}},
        {"kind": "anywidget-command", "name": "rpc", "id": "4", "msg": None},
        {"kind": "anywidget-command", "name": "rpc", "id": "5", "msg": {"kind": "ping"}},
    ]  # fmt: skip
    envelopes += [
        {"kind": "anywidget-command", "name": "rpc", "id": str(i), "msg": _message(rng)}
        for i in range(100)
    ]
    try:
        for env in envelopes:
            ex._handle_custom_msg(env, [b"\x01"] if rng.random() < 0.5 else [])
            assert_untouched(before, model, f"envelope {json.dumps(env)[:80]}")
        replies = [
            c for c in sent if isinstance(c, dict) and c.get("kind") == "anywidget-command-response"
        ]
        assert any(r["id"] == "5" and r["response"]["kind"] == "pong" for r in replies)
        for r in replies:
            json.dumps(r)
    finally:
        ex.close()


def test_frontend_state_updates_cannot_reach_the_model() -> None:
    """Synced traits the frontend may set: odd values are ignored or refused, the model is not touched."""
    model = _initialised()
    ex = _explorer(model)
    before = state_fingerprint(model)
    try:
        for state in (
            {"selected": "no.such.path"},
            {"probe_mode": "evil"},
            {"probe_mode": "real"},
            {"readonly": True},
            {"busy": "edit"},
            {"tree_state": {"rows": "garbage"}},
            {"history": {}},
        ):
            try:
                ex.set_state(state)
            except TraitError as e:  # refused (in a kernel, the comm handler logs it)
                assert "probe_mode" in state and "'fake', 'real'" in str(e)
            assert_untouched(before, model, f"state {state}")
        assert ex._session.mode in ("fake", "real")
        _check_reply(ex.rpc({"kind": "ping"}, []))
    finally:
        ex.close()
