"""The Explorer's export check (issue 56): ``ex.export_check()`` mirrors ``tx.export_check`` and
shows it in the Export tab's state (``_view/export_view.py``); the tab's request; a patch marks it
stale, never re-runs it by itself, and the next check lists what changed."""

from __future__ import annotations

import json

import pytest
import torch

import torchxray as tx
from torchxray import demo

pytest.importorskip("onnxscript")


def test_ex_export_check_shows_the_report_and_what_a_replace_and_an_edit_change() -> None:
    model = demo.export_net()
    ex = tx.explore(model, demo.sequences(), mode="real")
    try:
        assert ex.export_state["status"] == "none"  # slow: nothing runs until asked for
        rep = ex.export_check()
        alone = tx.export_check(model, demo.sequences())
        assert [(i.target, i.path, i.line) for i in rep.failures] == [
            (i.target, i.path, i.line) for i in alone.failures
        ]
        state = ex.export_state
        json.dumps(state)  # plain JSON for the traitlet
        assert state["status"] == "fails" and not state["stale"]
        assert [(i["target"], i["path"]) for i in state["issues"]] == [
            ("export", "mlp"), ("onnx", "proj"), ("onnx", "mixer")
        ]  # fmt: skip
        qr = state["issues"][1]
        assert qr["src_cls"] == "torchxray.demo.OrthoLinear" and qr["file"].endswith("demo.py")
        assert "torch.linalg.qr" in qr["source"] and qr["blocking"]
        assert state["rows"]["proj"] == {"export": "ok", "onnx": "fails"}
        assert state["rows"]["mlp"]["export"] == "fails" and state["rows"][""]["onnx"] == "fails"

        # Replace the QR layer: the check is stale, not re-run; Check again says what changed.
        ex.replace("proj", torch.nn.Linear(16, 16, bias=False))
        assert ex.export_state["stale"] and ex.export_report is rep
        ex.export_check()
        state = ex.export_state
        assert not state["stale"]
        assert (
            "fixed: [onnx] proj (OrthoLinear): no ONNX translation: aten.linalg_qr.default"
            in state["changes"]
        )
        assert not any(c.startswith("new:") for c in state["changes"])

        # Edit the gate off and swap the running max: every target takes it, drift appears.
        ex.edit("mlp", gate=False)
        ex.replace("mixer", torch.nn.Identity())
        ex._session.live_model().eval()
        ex.export_check()
        state = ex.export_state
        assert state["status"] == "ok", state
        assert "export: fails -> ok" in state["changes"] and "onnx: fails -> ok" in state["changes"]
        assert state["drift"] and max(d[0] for d in state["drift"].values()) < 1e-4
    finally:
        ex.close()


def test_the_tab_request_runs_the_targets_asked_and_keeps_them() -> None:
    ex = tx.explore(torch.nn.Sequential(torch.nn.Linear(4, 4)).eval(), torch.randn(2, 4))
    try:
        session = ex._session
        reply, states = session.handle({"kind": "export", "targets": ["export"]})
        assert reply["kind"] == "export" and reply["status"] == "ok", reply
        assert [t["target"] for t in reply["targets"]] == ["export"] and "export_state" in states
        reply, _ = session.handle({"kind": "export"})  # Check again: the same targets
        assert [t["target"] for t in reply["targets"]] == ["export"]
        assert reply["changes"] == ["nothing changed: the same targets, issues and drift as before"]
        bad, _ = session.handle({"kind": "export", "targets": ["onx"]})
        assert bad["kind"] == "error" and "unknown export target 'onx'" in bad["message"]
    finally:
        ex.close()


def test_without_example_inputs_the_tab_says_how_to_give_them() -> None:
    ex = tx.explore(torch.nn.Linear(2, 2))
    try:
        reply, _ = ex._session.handle({"kind": "export"})
        assert reply["kind"] == "error" and "needs example inputs" in reply["message"]
    finally:
        ex.close()
