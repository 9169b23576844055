"""The Training tab while a loop trains in a cell, as a person watches it: the step moves on live,
Pause holds the loop (the widget still answers: a click on a module draws its sparklines), Resume
lets it go on, the dead ReLU gets its badge, the tree takes a training colour, and the NaN the
loop meets is named, marked on its row and selectable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import (
    Lab,
    code_cells,
    explorer,
    hide_file_browser,
    open_notebook,
    run_cell,
    treeitem,
    wait_idle,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import time
import torch
from torch import nn
import torchxray as tx

torch.set_num_threads(1)


class NaNBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class Bad(nn.Module):
    on = False  # its backward turns NaN once set

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x):
        y = self.lin(x)
        return NaNBackward.apply(y) if Bad.on else y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act1, self.bad = nn.Linear(8, 32), nn.ReLU(), Bad()
        self.lin2, self.act2, self.head = nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)

    def forward(self, x):
        h = self.bad(self.act1(self.fc1(x)))
        return self.head(h + self.act2(self.lin2(h)))  # act2's dead units block only their branch


torch.manual_seed(0)
model = Net()
with torch.no_grad():
    model.lin2.bias.fill_(-50.0)  # act2: dead
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 8)"""

SHOW = "ex = tx.explore(model, x)\nw = ex.watch(opt, every=5, check_every_step=True)\nex"

LOOP = """\
# The NaN comes 30 steps after the person resumed a pause (a watch callback sees both).
seen = {"paused": False, "nan_at": None}


def note(w):
    if w.paused:
        seen["paused"] = True
    elif seen["paused"] and seen["nan_at"] is None:
        seen["nan_at"] = w.steps + 30


w.on_step(note)
for step in range(1, 4000):
    Bad.on = step == seen["nan_at"]
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    w.step(loss)
    time.sleep(0.02)
    if w.nonfinite is not None and w.steps > w.nonfinite.step + 40:
        break
print("done", w.steps, "nan at", w.nonfinite.step, w.nonfinite.path)"""


def _step(text: str) -> int:
    m = re.search(r"step (\d+)", text)
    assert m, text
    return int(m.group(1))


def test_training_tab_follows_a_running_loop(page: Page, lab: Lab, shots: Path) -> None:
    nb = lab.write_notebook("training-tab.ipynb", SETUP, SHOW, LOOP)
    open_notebook(page, lab, nb, "training-tab")
    hide_file_browser(page)
    run_cell(page, 0, timeout=120_000)
    run_cell(page, 1, timeout=120_000)
    ex = explorer(page, 1)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    ex.get_by_role("tab", name="Training").click()
    pane = ex.get_by_role("tabpanel", name="Training")
    expect(pane).to_contain_text("step 0")
    # Run the loop without waiting for it.
    code_cells(page).nth(2).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    status = pane.locator(".tx-train-status")
    expect(status).to_have_text(re.compile(r"^step ([1-9]\d*) "), timeout=60_000)
    first = _step(status.inner_text())
    expect(status).not_to_have_text(re.compile(rf"^step {first} "))  # live, while the cell runs
    assert _step(status.inner_text()) > first

    # Pause: the loop waits between two steps, and the widget keeps answering meanwhile.
    pane.get_by_role("button", name="Pause").click()
    expect(status).to_have_text(re.compile(r"^paused after step \d+"))
    held = status.inner_text()
    page.wait_for_timeout(1500)
    expect(status).to_have_text(held)
    treeitem(ex, "fc1").click()
    expect(pane.locator(".tx-train-module h4")).to_contain_text("fc1 · Linear")
    expect(pane.locator(".tx-train-series polyline")).to_have_count(4)
    expect(treeitem(ex, "act2").locator(".tx-badge-t-dead")).to_have_text("dead")
    ex.get_by_label("colour the tree by").select_option("update_ratio")
    swatch = treeitem(ex, "fc1").locator(".tx-heat")
    expect(swatch).to_have_attribute("style", re.compile("background"))
    page.screenshot(path=str(shots / "training-tab-paused.png"))

    pane.get_by_role("button", name="Resume").click()
    expect(status).to_have_text(re.compile(r"^step \d+ "))
    assert _step(status.inner_text()) >= _step(held)

    # 30 steps later the loop meets the planted NaN: named, marked on its row, selectable.
    banner = pane.locator(".tx-train-nan")
    expect(banner).to_contain_text(re.compile(r"First NaN/Inf: step \d+, bad"), timeout=60_000)
    expect(banner).to_contain_text("backward")
    expect(treeitem(ex, "bad").locator(".tx-badge-first-nan")).to_have_text("first NaN")
    treeitem(ex, "head").click()
    banner.get_by_role("button", name="Select it").click()
    expect(treeitem(ex, "bad")).to_have_attribute("aria-selected", "true")
    wait_idle(page, timeout=120_000)
    out = code_cells(page).nth(2).locator(".jp-OutputArea").inner_text()
    nan_step = _step(banner.inner_text())
    assert f"nan at {nan_step} bad" in out, out
    assert nan_step > _step(held), (nan_step, held)
    page.screenshot(path=str(shots / "training-tab-nan.png"))
