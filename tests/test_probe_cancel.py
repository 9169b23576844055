"""Cancelling a running probe: the widget's Cancel button stops a background
probe at its next module call, and nothing of the probe is left behind; in a kernel, the probe
after an Apply and the Probe tab's "Run probe" run in the background too, so they can be cancelled.
``background.in_kernel`` is patched to True here, as in test_widget_async.py."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import torch
from fixtures.slow import Slow
from torch import nn

import torchxray as tx
from torchxray._probe import cancel
from torchxray._view import background
from torchxray.widget import Explorer, explore

torch_call_impl = nn.Module._call_impl


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "in_kernel", lambda: True)


def call(ex: Explorer, **msg: Any) -> dict[str, Any]:
    reply, _ = ex.rpc(msg, [])
    json.dumps(reply)
    return reply


def untouched(model: nn.Module) -> None:
    """No probe forward, hook or flag is left on the model or on nn.Module."""
    assert nn.Module.__call__ is nn.Module._wrapped_call_impl
    assert nn.Module._call_impl is torch_call_impl
    for m in model.modules():
        assert "forward" not in m.__dict__ and "_call_impl" not in m.__dict__, m
        assert not m._forward_hooks and not m._forward_pre_hooks
    assert model.body.training and model.body[0].training


def test_probe_cancelled_in_scope_stops_at_the_next_module() -> None:
    model = Slow()
    token = cancel.Cancel()
    got: list[BaseException] = []

    def run() -> None:
        try:
            with cancel.scope(token):
                tx.probe(model, torch.randn(3, 4))
        except BaseException as e:  # noqa: BLE001 - the test looks at what it was
            got.append(e)

    t = threading.Thread(target=run)
    t.start()
    assert model.gate.entered.wait(30)
    token.set()
    model.gate.opened.set()
    t.join(30)
    assert len(got) == 1 and isinstance(got[0], cancel.ProbeCancelled), got
    assert token.where == "body" and "before body" in str(got[0])
    untouched(model)
    # Outside the scope a probe runs to its end; the model still probes as before.
    assert cancel.current() is None
    assert tx.probe(model, torch.randn(3, 4))["body.2"].output_shapes == ((3, 2),)


def test_a_forward_catching_exceptions_does_not_swallow_the_cancel() -> None:
    class Catching(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            try:
                return self.inner(x)
            except Exception:  # noqa: BLE001 - what some model code does
                return x

    token = cancel.Cancel()
    token.set()
    with pytest.raises(cancel.ProbeCancelled), cancel.scope(token):
        tx.probe(nn.Sequential(Catching()), torch.randn(2, 4))


def test_cancel_button_stops_the_first_probe(kernel: None) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    assert model.gate.entered.wait(30) and ex.busy == "probe"
    assert call(ex, kind="cancel") == {"kind": "cancel", "running": True}
    model.gate.opened.set()
    assert ex.wait(30) is None and not ex.probing
    assert ex.busy == "" and ex.probe_summary["ok"] is None
    assert ex.probe_summary["status"].startswith("probe cancelled before body"), ex.probe_summary[
        "status"
    ]
    untouched(model)
    # Nothing runs now: a second cancel says so; Run probe runs it again, to its end.
    assert call(ex, kind="cancel") == {"kind": "cancel", "running": False}
    assert call(ex, kind="probe")["status"].startswith("probing")
    report = ex.wait(30)
    assert report is not None and report.ok and ex.probe_summary["status"].startswith("probe ok")
    ex.close()


def test_the_probe_after_an_apply_runs_in_the_background_and_can_be_cancelled(
    kernel: None,
) -> None:
    model = Slow()
    model.gate.opened.set()
    ex = explore(model, torch.randn(3, 4))
    assert ex.wait(30) is not None
    model.gate.opened.clear()
    model.gate.entered.clear()
    # The reply comes once the model is patched and re-walked; the probe runs after it.
    got = call(ex, kind="edit", path="body.2", changes={"out_features": "5"})
    assert got["kind"] == "patched" and model.body[2].out_features == 5
    assert model.gate.entered.wait(30) and ex.probing and ex.busy == "probe"
    # The old report's shapes are not shown on the new model meanwhile.
    assert ex._session is not None and ex._session.report is None
    assert ex.probe_summary["status"].startswith("probing")
    assert ex.cancel()
    model.gate.opened.set()
    assert ex.wait(30) is None and "cancelled" in ex.probe_summary["status"]
    untouched(model)
    # The patch stands, and Undo works as after any probe.
    assert model.body[2].out_features == 5
    assert call(ex, kind="undo")["kind"] == "patched"
    report = ex.wait(30)
    assert report is not None and report["body.2"].output_shapes == ((3, 2),)
    assert model.body[2].out_features == 2
    ex.close()


def test_close_cancels_a_running_probe(kernel: None) -> None:
    model = Slow()
    ex = explore(model, torch.randn(3, 4))
    assert model.gate.entered.wait(30)
    closer = threading.Thread(target=ex.close)
    closer.start()
    model.gate.opened.set()
    closer.join(30)
    assert not closer.is_alive() and ex._session is None
    untouched(model)
