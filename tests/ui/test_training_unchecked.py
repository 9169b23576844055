"""A NaN that begins between two sampled steps, as a person sees it in the Training tab with the
default watch (NaN/Inf checked on sampled steps only): the banner names the next sampled step, the
first module whose weights are already NaN/Inf, the phase "update" and the steps that were not
checked, and says which module began it is not known (no module is guessed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, explorer, hide_file_browser, open_notebook, run_cell, treeitem, wait_idle
from playwright.sync_api import Page, expect
from test_training_tab import SETUP

pytestmark = pytest.mark.ui

SHOW = "ex = tx.explore(model, x)\nw = ex.watch(opt, every=5)\nex"

LOOP = """\
for step in range(1, 21):  # every=5 checks steps 1, 6, 11 and 16: the NaN comes at step 12
    Bad.on = step == 12
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()
print("done", w.steps, "nan at", w.nonfinite.step, w.nonfinite.path, w.nonfinite.phase)"""


def test_a_nan_between_sampled_steps_is_shown_as_spoilt_weights(
    page: Page, lab: Lab, shots: Path
) -> None:
    nb = lab.write_notebook("training-unchecked.ipynb", SETUP, SHOW, LOOP)
    open_notebook(page, lab, nb, "training-unchecked")
    hide_file_browser(page)
    run_cell(page, 0, timeout=120_000)
    run_cell(page, 1, timeout=120_000)
    ex = explorer(page, 1)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    ex.get_by_role("tab", name="Training").click()
    pane = ex.get_by_role("tabpanel", name="Training")
    run_cell(page, 2, timeout=120_000)
    wait_idle(page, timeout=120_000)
    banner = pane.locator(".tx-train-nan")
    expect(banner).to_contain_text("First NaN/Inf: step 16, fc1", timeout=60_000)
    expect(banner).to_contain_text("(update, Linear)")
    expect(banner).to_contain_text("at steps 11-15, which were not checked")
    expect(banner).to_contain_text("check_every_step=True")
    expect(treeitem(ex, "fc1").locator(".tx-badge-first-nan")).to_have_text("first NaN")
    banner.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "training-unchecked-nan.png"))
