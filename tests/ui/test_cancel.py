"""A person stops a probe that takes too long: the header's "Cancel probe"
stops the first probe, and the probe after an Apply, at the next layer; the model stays as it is,
the patch stands, and Undo works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import (
    Lab,
    errors,
    explorer,
    hide_file_browser,
    open_notebook,
    run_all,
    run_cell,
    treeitem,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

# A real-mode probe runs the forward: 80 layers of half a second each, far longer than the flow.
SETUP = """\
import time
import torch
from torch import nn
import torchxray as tx

DELAY = 0.5

class Sleepy(nn.Module):
    def forward(self, x):
        time.sleep(DELAY)
        return x

model = nn.Sequential(nn.Linear(4, 8), *[Sleepy() for _ in range(80)], nn.Linear(8, 2))
"""


def test_cancel_the_first_probe_and_the_one_after_apply(page: Page, lab: Lab, shots: Path) -> None:
    nb = lab.write_notebook(
        "cancel.ipynb",
        SETUP,
        'ex = tx.explore(model, torch.randn(3, 4), mode="real")\nex',
        "DELAY = 0",
        "DELAY = 0.5",
    )
    open_notebook(page, lab, nb, "cancel")
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []

    ex = explorer(page, 1)
    status = ex.get_by_role("status")
    cancel = ex.get_by_role("button", name="Cancel probe")
    expect(status).to_have_text(re.compile(r"^probing"))
    expect(cancel).to_be_visible()
    ex.screenshot(path=str(shots / "cancel_probing.png"))
    cancel.click()
    # Stopped at the next layer (half a second), not after the 40 s the probe would take.
    expect(status).to_have_text(re.compile(r"^probe cancelled before \d+"), timeout=10_000)
    expect(cancel).to_be_hidden()
    expect(ex).to_have_attribute("aria-busy", "false")
    ex.screenshot(path=str(shots / "cancel_first.png"))

    # An Apply's probe runs in the background too: the patch is there at once, its probe can stop.
    treeitem(ex, "0").click()
    ex.get_by_role("tab", name="Form").click()
    out = ex.get_by_label("out_features", exact=True)
    expect(out).to_have_value("8")
    out.fill("6")
    ex.get_by_role("button", name="Apply").click()
    expect(cancel).to_be_visible()
    expect(status).to_have_text(re.compile(r"^probing"))
    cancel.click()
    expect(status).to_have_text(re.compile(r"^probe cancelled"), timeout=10_000)
    ex.get_by_role("tab", name="History").click()
    expect(ex.get_by_role("tabpanel", name="History")).to_contain_text("out_features")
    ex.screenshot(path=str(shots / "cancel_after_apply.png"))
    # The patch stands until Undo, whose own probe is cancelled the same way.
    undo = ex.locator(".tx-header").get_by_role("button", name="Undo")
    expect(undo).to_be_enabled()
    undo.click()
    expect(cancel).to_be_visible()
    cancel.click()
    expect(status).to_have_text(re.compile(r"^probe cancelled"), timeout=10_000)
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_label("out_features", exact=True)).to_have_value("8")

    # A probe that passed, then one cancelled: the header says so, and that what it shows is the
    # run before, not a plain "probe ok" as if the cancelled probe had finished.
    run_cell(page, 2)  # DELAY = 0
    ex.get_by_role("tab", name="Probe").click()
    run = ex.get_by_role("tabpanel", name="Probe").get_by_role("button", name="Run probe")
    run.click()
    expect(status).to_have_text(re.compile(r"^probe ok: 83 modules"))
    run_cell(page, 3)  # DELAY = 0.5
    run.click()
    expect(cancel).to_be_visible()
    cancel.click()
    expect(status).to_have_text(
        re.compile(r"^probe cancelled .*Shown: the run before \(probe ok: 83 modules\)$"),
        timeout=10_000,
    )
    expect(status).to_have_class(re.compile(r"tx-none"))
    ex.screenshot(path=str(shots / "cancel_shows_the_run_before.png"))
