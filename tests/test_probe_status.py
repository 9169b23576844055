"""What the header says about a probe that is not the model's latest word: cancelled (before its
first module call too, while it sets up) or running again, the report shown is named as the run
before, in neutral colours (`stale`), never as a plain "probe ok"."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import torchxray as tx
from torchxray._probe.cancel import Cancel, ProbeCancelled, scope
from torchxray._view.session import Session


def test_a_probe_cancelled_before_its_first_module_call_stops_in_its_setup() -> None:
    token = Cancel()
    token.set()
    with scope(token), pytest.raises(ProbeCancelled, match="while setting up"):
        tx.probe(nn.Sequential(nn.Linear(2, 2)), torch.randn(1, 2))


def test_a_cancelled_probe_leaves_the_last_report_named_as_such() -> None:
    s = Session(nn.Sequential(nn.Linear(2, 2)), (torch.randn(1, 2),))
    s.run_probe()
    fresh = s.probe_summary()
    assert fresh["status"] == "probe ok: 2 modules" and not fresh["stale"]
    s.probe_note = "probe cancelled before 0; Run probe (Probe tab) runs it again"
    got = s.probe_summary()
    assert got["stale"] and got["ok"] is True
    assert got["status"] == (
        "probe cancelled before 0; Run probe (Probe tab) runs it again. "
        "Shown: the run before (probe ok: 2 modules)"
    )
