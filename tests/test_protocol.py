"""The protocol: validate (every request kind, defaults, the malformed messages it must refuse), and
the contract between Python and TypeScript (generated types up to date, one handler per kind, every
reply and synced state as declared)."""

from __future__ import annotations

import difflib
import re
import subprocess
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import pytest
import torch
import torch.nn as nn
from typing_extensions import get_type_hints, is_typeddict

import torchxray as tx
from torchxray._view.export_types import ExportState
from torchxray._view.handlers import HANDLERS
from torchxray._view.host import Host
from torchxray._view.ranks_types import RanksState
from torchxray._view.replies import HistoryState, Overview, ProbeSummary, TreeState
from torchxray._view.snapshot_types import Snapshot
from torchxray.protocol import (
    MAX_MESSAGE_BYTES,
    REPLIES,
    REQUEST_TYPES,
    REQUESTS,
    SLOW,
    SLOW_TIMEOUT_KINDS,
    ErrorReply,
    ProtocolError,
    error_reply,
    validate,
)


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
    samples: dict[object, object] = {"str": "x", "str?": None, "int?": None, "changes": {}, int: 0}
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


# -- the contract: generated TypeScript, handler table, and replies against their declarations ----

ROOT = Path(__file__).parents[1]


def test_the_generated_typescript_is_up_to_date() -> None:
    from torchxray._view.protocol_ts import generate

    for name, fresh in generate().items():
        committed = (ROOT / "js" / name).read_text(encoding="utf-8")
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(True), fresh.splitlines(True), "committed", "generated"
            )
        )
        assert not diff, f"js/{name} is stale: run `make js`\n{diff}"


def test_the_frontend_type_checks_against_the_generated_contract() -> None:
    # js/ is the other half of the contract: `Rpc.call` takes only a request the kernel declares
    # (requests_gen.ts: its kind, its fields) and returns that kind's reply (protocol_gen.ts), so
    # a kind or field renamed on one side, or a reply field the view reads that the kernel no
    # longer sends, fails tsc once the generated files are fresh (the test above).
    tsc = ROOT / "node_modules" / ".bin" / "tsc"
    if not tsc.exists():
        pytest.skip("the frontend's toolchain is not installed (make setup)")
    run = subprocess.run(
        [str(tsc), "--noEmit", "-p", "js/tsconfig.json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"tsc found errors:\n{run.stdout}{run.stderr}"


def test_every_request_kind_has_one_handler_and_one_reply() -> None:
    assert set(HANDLERS) == set(REQUESTS) == set(REPLIES) == set(REQUEST_TYPES)
    assert SLOW <= set(REQUESTS) and SLOW_TIMEOUT_KINDS >= SLOW
    # Slow kinds carry the revision they were made at (a stale one is refused); a probe and a
    # compile check and "Plan again" (ranks_plan) read the model as it is when they run.
    assert all("rev" in REQUESTS[k] for k in SLOW - {"probe", "compile", "ranks_plan", "export"})


def test_every_handler_is_typed_host_and_its_request_to_its_reply_and_states() -> None:
    # mypy checks each handler's body against these annotations; this checks the annotations
    # against the contract, so that a handler cannot take or answer another kind's shape.
    wrong = []
    for kind, handler in HANDLERS.items():
        hints = get_type_hints(handler)
        params = [p for p in hints if p != "return"]
        want = {"host": Host, "req": REQUEST_TYPES[kind]}
        got = dict(zip(params, (hints[p] for p in params)))
        returns = get_args(hints["return"])
        if got != want or returns != (REPLIES[kind], frozenset[str]):
            wrong.append(f"{kind}: {handler.__name__}{got} -> {returns}")
        if handler.__name__ != f"on_{kind}":
            wrong.append(f"{kind}: named {handler.__name__}, not on_{kind}")
    assert not wrong, "\n".join(wrong)


def _problems(value: Any, hint: Any, where: str) -> list[str]:
    """How `value` departs from the declared `hint` (TypedDicts checked key by key, deeply)."""
    origin, args = get_origin(hint), get_args(hint)
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: expected {hint.__name__}, got {type(value).__name__}"]
        fields = get_type_hints(hint)
        out = [f"{where}: missing {k!r}" for k in sorted(hint.__required_keys__ - set(value))]
        out += [
            f"{where}: undeclared {k!r} ({hint.__name__})" for k in sorted(set(value) - set(fields))
        ]
        for k in sorted(set(value) & set(fields)):
            out += _problems(value[k], fields[k], f"{where}.{k}")
        return out
    if origin in (Union, types.UnionType):
        tries = [_problems(value, a, where) for a in args]
        return [] if any(not t for t in tries) else min(tries, key=len)
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} not one of {args}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: expected a list, got {type(value).__name__}"]
        return [p for i, v in enumerate(value) for p in _problems(v, args[0], f"{where}[{i}]")]
    if origin is tuple:
        if not isinstance(value, (tuple, list)) or len(value) != len(args):
            return [f"{where}: expected {len(args)} items, got {value!r}"]
        return [p for i, (v, a) in enumerate(zip(value, args)) for p in _problems(v, a, where)]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: expected an object, got {type(value).__name__}"]
        return [p for k, v in value.items() for p in _problems(v, args[1], f"{where}[{k!r}]")]
    if hint is type(None):
        return [] if value is None else [f"{where}: expected null, got {value!r}"]
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, hint)
    return [] if ok else [f"{where}: expected {hint.__name__}, got {value!r}"]


def test_the_checker_catches_drift() -> None:
    # The reply check below is only as good as this: a missing, an undeclared and a mistyped key.
    reply = {"kind": "source", "html": None, "file": None, "line": "3", "reason": None}
    reply |= {"qualname": "q", "forward_lines": [1, 2], "cell": None, "rev": 1}
    assert _problems(reply, REPLIES["source"], "r") == [
        "r: missing 'note'",
        "r: undeclared 'rev' (SourceReply)",
        "r.line: expected int, got '3'",
    ]


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


def _model() -> nn.Module:
    wn = nn.Linear(4 * 8 * 8, 6)
    torch.nn.utils.parametrizations.weight_norm(wn)  # source() says it shows the original class
    return nn.Sequential(*(_Block() for _ in range(3)), nn.Flatten(), wn, nn.Linear(6, 2))


# Every kind, in an order where each succeeds (undo after a patch, redo after the undo).
# Kinds that need a forward that works (the model above fails at 1.conv): sent to a second one.
_WORKING = [
    {"kind": "memory", "path": "0", "training": True},
    {"kind": "figures", "figure": "activations", "paths": ["0", "0.conv", "9"]},
    {"kind": "cancel"},
    {"kind": "train_series", "path": "0"},
    {"kind": "train_control", "action": "pause"},
    {"kind": "train_figures", "figure": "grad_norm", "paths": ["0"]},
    {"kind": "train_poll"},  # no job attached: the reply says how to attach one
    {"kind": "compile"},
    {"kind": "filter", "query": "", "breaks": True},
    {"kind": "ranks", "rank": 1, "order": "bytes"},
    {"kind": "ranks_plan"},
    {"kind": "export", "targets": ["export"]},
]
_SESSION = [
    {"kind": "ping"},
    {"kind": "select", "path": "4"},
    {"kind": "children", "path": ""},
    {"kind": "children", "path": "", "offset": 0, "limit": 2, "unfold": True},
    {"kind": "filter", "query": "conv"},
    {"kind": "reveal", "path": "0.conv"},
    {"kind": "source", "path": "4"},
    {"kind": "source", "path": "0", "cls": "torch.nn.modules.module.Module"},
    {"kind": "form", "path": "5"},
    {"kind": "form", "cls": "torch.nn.Linear", "prefill": "5"},
    {"kind": "edit", "path": "5", "changes": {"out_features": "3"}, "rev": 1},
    {"kind": "replace", "path": "0.act", "cls": "torch.nn.GELU"},
    {"kind": "undo"},
    {"kind": "redo"},
    {"kind": "probe", "mode": "fake"},
    {"kind": "probe_table"},
    {"kind": "summary", "depth": 1},
    {"kind": "mro", "path": "0"},
    {"kind": "catalog", "query": "conv"},
    {"kind": "asset", "name": "viz"},
    {"kind": "pick", "query": "act"},
    {"kind": "plan", "paths": ["0.act", "1.act"], "cls": "torch.nn.GELU"},
    {"kind": "bulk", "op": "freeze", "paths": ["0", "1"]},
    {"kind": "peft", "paths": ["5"]},
    {"kind": "diff", "against": "open"},
    {"kind": "stats", "path": "5"},
    {"kind": "health", "paths": ["", "5"]},
    {"kind": "figures", "figure": "flops", "paths": ["0", "4"]},
    {"kind": "flow", "offset": 0, "limit": 50},
    {"kind": "graph", "path": ""},
    {"kind": "edit", "path": "5", "changes": {"out_features": "x"}},  # an ErrorReply, per field
]


def _fsdp(model: nn.Module, mesh: object) -> nn.Module:
    from torch.distributed.fsdp import fully_shard

    return fully_shard(model, mesh=mesh)


def test_every_request_kind_gets_the_reply_it_declares() -> None:
    from torchxray._view.assets import STATIC
    from torchxray._view.session import Session

    if not (STATIC / "viz.js").is_file():
        pytest.skip("the frontend is not built (make js): no asset to send")
    session = Session(_model(), (torch.randn(1, 3, 8, 8),))
    session.run_probe()
    assert {m["kind"] for m in _SESSION + _WORKING} == set(REQUESTS)
    working = Session(nn.Sequential(_Block(), nn.Flatten(), nn.Linear(256, 2)), session.args)
    # The Ranks tab's plan (no training step: planned in this process, fast).
    plan = tx.ranks(working.live_model(), _fsdp, {"dp": 2}, session.args, step=False)
    working.ranks.attach(plan, working.live_model(), working.model_rev)
    problems: list[str] = []
    seen: dict[str, set[str]] = {}
    for msg in _SESSION + _WORKING:
        reply, _changed = (working if msg in _WORKING else session).handle(msg)
        declared = ErrorReply if msg is _SESSION[-1] else REPLIES[str(msg["kind"])]
        problems += _problems(reply, declared, f"{msg['kind']}")
        seen.setdefault(declared.__name__, set()).update(reply)
        for state, shape in (
            (session.tree_state(), TreeState),
            (session.overview(), Overview),
            (session.probe_summary(), ProbeSummary),
            (session.history(), HistoryState),
        ):
            problems += _problems(state, shape, f"after {msg['kind']}: {shape.__name__}")
    problems += _problems(working.ranks_state(), RanksState, "ranks_state")
    problems += _problems(working.export_state(), ExportState, "export_state")
    # The read-only view's data, which js/snapshot.ts answers requests from.
    problems += _problems(session.snapshot(), Snapshot, "snapshot")
    assert not problems, "\n".join(problems)
    # Optional keys that must have been exercised, or the check above proved little about them.
    assert "note" in seen["SourceReply"] and "fields" in seen["ErrorReply"]
    assert session.handle({"kind": "source", "path": "4"})[0]["note"]  # type: ignore[typeddict-item]
