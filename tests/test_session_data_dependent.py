"""What the view says of a forward that fake tensors cannot run (a size only the values decide,
as a detector's region proposals have): the probe's error offers the real probe (`remedy`), the
real probe then runs, and the Memory tab's training step says it was measured by a real CPU run."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from torchxray._view.session import Session


class Pick(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x[:, 0] > 0]  # aten.nonzero: its size is the data's


def _model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), Pick(), nn.Linear(4, 2))


def _ok(reply: Any) -> dict[str, Any]:
    assert reply["kind"] != "error", reply
    return dict(reply)


def test_the_probe_error_offers_the_real_probe_and_it_runs() -> None:
    s = Session(_model(), (torch.randn(16, 4),), {})
    s.run_probe()
    summary = s.probe_summary()
    assert summary["ok"] is False and summary["error"] is not None
    assert summary["error"]["path"] == "1" and summary["error"]["remedy"] == "real"
    assert "aten.nonzero" in summary["error"]["message"]
    # The header says it in words (not torch's exception class) and what to do.
    assert summary["status"] == (
        "probe failed at 1: a fake probe cannot run aten.nonzero: its output size depends on "
        "the values; run a real probe"
    )
    real = _ok(s.handle({"kind": "probe", "mode": "real"})[0])
    assert real["ok"] is True and real["mode"] == "real" and real["error"] is None
    assert real["changed"] == 0  # a failed run that none passed before is no base to compare


def test_a_broken_edit_is_not_offered_the_real_probe() -> None:
    s = Session(_model(), (torch.randn(16, 3),), {})  # inputs that do not fit Linear(4, 4)
    s.run_probe()
    error = s.probe_summary()["error"]
    assert error is not None and error["path"] == "0" and error["remedy"] == ""
    assert "fake probe" not in s.probe_summary()["status"]


def test_memory_of_a_data_dependent_training_step_says_how_it_was_measured() -> None:
    s = Session(_model(), (torch.randn(16, 4),), {})
    s.run_probe()
    reply = _ok(s.handle({"kind": "memory", "path": "", "training": True})[0])
    assert reply["activations"] > 0 and reply["grads"] == reply["params"]
    assert "ran for real on the CPU" in reply["note"] and "aten.nonzero" in reply["note"]
    inference = _ok(s.handle({"kind": "memory", "path": "", "training": False})[0])
    assert "ran for real on the CPU" in inference["note"]


class _NormMadeInForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return nn.LayerNorm(h.shape[1:]).to(h.device)(h)


def test_a_layer_made_and_moved_in_the_forward_is_named_a_fake_limit() -> None:
    # torch cannot swap the fake weights of a layer made under fake tensors (nn.Module.to()):
    # the probe names that limit and offers the real probe, which runs it (``_probe/failure.py``).
    from torchxray import probe

    model = _NormMadeInForward().eval()
    rep = probe(model, torch.randn(3, 4), mode="fake")
    if not rep.ok:  # a torch release whose fake tensors can move it runs it
        assert rep.error.remedy == "real" and "cannot move a layer" in rep.error.headline
    assert probe(model, torch.randn(3, 4), mode="real").ok
