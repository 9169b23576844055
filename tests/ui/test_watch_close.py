"""A person watches a training loop (``ex.watch``), sees every row's "hook" badge and Pause in the
Training tab, then closes the watch (``w.close()``) in the next cell: the rows lose their hook
badges (the tree is read again: the watch's hooks are gone) and the Training tab says the watch is
closed, with no Pause, its loss curve kept."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, explorer, hide_file_browser, open_notebook, run_cell, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
from torch import nn
import torchxray as tx

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 8)"""

SHOW = "ex = tx.explore(model, x)\nw = ex.watch(opt, every=1)\nex"

LOOP = """\
for _ in range(12):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    w.step(loss)
w"""


def test_closing_the_watch_takes_its_hooks_and_pause_away(
    page: Page, lab: Lab, shots: Path
) -> None:
    nb = lab.write_notebook("watch-close.ipynb", SETUP, SHOW, LOOP, "w.close()\nw")
    open_notebook(page, lab, nb, "watch-close")
    hide_file_browser(page)
    run_cell(page, 0, timeout=120_000)
    run_cell(page, 1, timeout=120_000)
    ex = explorer(page, 1)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    hooks = ex.locator(".tx-mark-hooks")
    expect(hooks).to_have_count(4)  # the model and its three layers: the watch's hooks
    assert "<Watch Sequential: 12 steps" in run_cell(page, 2, timeout=120_000)
    ex.get_by_role("tab", name="Training").click()
    pane = ex.get_by_role("tabpanel", name="Training")
    expect(pane.locator(".tx-train-status")).to_have_text(re.compile(r"^step 12 "))
    expect(pane.get_by_role("button", name="Pause")).to_be_visible()
    page.screenshot(path=str(shots / "watch-open.png"))

    assert "<Watch closed after 12 steps>" in run_cell(page, 3)
    expect(hooks).to_have_count(0)
    expect(treeitem(ex, "0")).not_to_contain_text("hook")
    closed = pane.locator(".tx-train-closed")
    expect(closed).to_contain_text("the watch is closed (w.close()) after 12 steps")
    expect(pane.get_by_role("button", name="Pause")).to_have_count(0)
    expect(pane.get_by_role("button", name="Resume")).to_have_count(0)
    expect(pane.locator(".tx-train-loss")).to_contain_text("at step 12")
    treeitem(ex, "0").click()  # the closed watch's history stays readable
    expect(pane.locator(".tx-train-module h4")).to_contain_text("0 · Linear")
    expect(pane.locator(".tx-train-series polyline")).to_have_count(4)
    ex.get_by_role("tab", name="Overview").click()
    expect(ex.get_by_role("tabpanel", name="Overview")).not_to_contain_text("hooks")
    ex.get_by_role("tab", name="Training").click()
    page.screenshot(path=str(shots / "watch-closed.png"))
