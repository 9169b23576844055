"""A person explores a model whose probe takes a while: the tree is there at once, they select and
read panes while the probe runs, Apply waits for it, and its results fill in when it is done."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import (
    Lab,
    code_cells,
    errors,
    explorer,
    hide_file_browser,
    open_notebook,
    run_all,
    run_cell,
    treeitem,
)
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

# A real-mode probe runs the forward: one custom module sleeps in it, long enough to look around.
SETUP = """\
import time
import torch
from torch import nn
import torchxray as tx

class Sleepy(nn.Module):
    def forward(self, x):
        time.sleep(12)
        return x

model = nn.Sequential(Sleepy(), nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""


def test_tree_before_the_probe_then_results_fill_in(page: Page, lab: Lab, shots: Path) -> None:
    nb = lab.write_notebook(
        "first_paint.ipynb", SETUP, 'ex = tx.explore(model, torch.randn(3, 4), mode="real")\nex'
    )
    open_notebook(page, lab, nb, "first_paint")
    hide_file_browser(page)
    run_all(page)  # the cell returns while the probe still sleeps
    assert errors(page) == []

    ex = explorer(page, 1)
    status = ex.get_by_role("status")
    expect(treeitem(ex, "1")).to_be_visible()
    expect(status).to_have_text(re.compile(r"^probing"))
    expect(ex).to_have_attribute("aria-busy", "true")
    # Undo and Redo take no clicks meanwhile; their box says why.
    expect(ex.locator(".tx-header .tx-buttons")).to_have_attribute(
        "title", re.compile(r"until the probe")
    )

    # Selection and the panes work meanwhile.
    treeitem(ex, "1").click()
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("Linear")
    ex.get_by_role("tab", name="Source").click()
    expect(ex.get_by_role("tabpanel", name="Source")).to_contain_text("class Linear")
    expect(status).to_have_text(re.compile(r"^probing"))  # still running: all of it was live
    ex.screenshot(path=str(shots / "first_paint_probing.png"))

    # Then the probe's results fill in, and the kernel is free again.
    expect(status).to_have_text(re.compile(r"^probe ok: 5 modules"), timeout=60_000)
    expect(ex).to_have_attribute("aria-busy", "false")
    treeitem(ex, "3").click()
    ex.get_by_role("tab", name="Overview").click()
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("3×2 float32")
    ex.screenshot(path=str(shots / "first_paint_done.png"))


# A module slow to read (its extra_repr takes seconds): the walk that the tree needs is slow too.
SLOW_WALK = """\
import time
import torch
from torch import nn
import torchxray as tx

class SlowToRead(nn.Linear):
    def extra_repr(self):
        time.sleep(4)
        return super().extra_repr()

model = nn.Sequential(SlowToRead(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""


def start_explore(page: Page, lab: Lab, name: str, setup: str) -> tuple[Locator, Locator]:
    """Runs the `setup` cell, then `tx.explore(model, torch.randn(3, 4))` without waiting for it
    to end; (the view, the explore cell's prompt)."""
    nb = lab.write_notebook(f"{name}.ipynb", setup, "tx.explore(model, torch.randn(3, 4))")
    open_notebook(page, lab, nb, name)
    hide_file_browser(page)
    run_cell(page, 0)
    code_cells(page).nth(1).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    return explorer(page, 1), code_cells(page).nth(1).locator(".jp-InputPrompt")


def test_the_view_shows_before_the_tree_of_a_model_slow_to_read(
    page: Page, lab: Lab, shots: Path
) -> None:
    # The view is drawn while the kernel still reads the model (header, status, an empty tree
    # pane), before the cell ends.
    ex, prompt = start_explore(page, lab, "slow_walk", SLOW_WALK)
    expect(ex.get_by_role("status")).to_have_text("reading the model…")
    expect(ex.get_by_placeholder(re.compile("^filter"))).to_be_visible()
    assert ex.get_by_role("treeitem").count() == 0
    placeholder = ex.get_by_role("tree").evaluate("(t) => getComputedStyle(t, '::before').content")
    assert "reading the model" in placeholder
    expect(ex.get_by_role("tabpanel", name="Overview")).to_have_text("reading the model…")
    assert prompt.inner_text().strip() == "[*]:"  # the cell is still running: the walk
    ex.screenshot(path=str(shots / "slow_walk_reading.png"))
    # Then the tree arrives, and the probe's results after it.
    expect(treeitem(ex, "0")).to_be_visible(timeout=30_000)
    expect(treeitem(ex, "0")).to_contain_text("SlowToRead")
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"), timeout=30_000)
    assert errors(page) == []
    ex.screenshot(path=str(shots / "slow_walk_done.png"))


# A big model (here: lowered to 50 modules) shows its outline first, while the kernel reads its
# tensors: one module's extra_repr sleeps in that read.
SLOW_DETAILS = SLOW_WALK.replace(
    "model = nn.Sequential(SlowToRead(4, 8), nn.ReLU(), nn.Linear(8, 2))",
    """\
blocks = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(30)])
model = nn.Sequential(SlowToRead(4, 8), nn.ReLU(), blocks, nn.Linear(8, 2))
tx.Explorer.outline_from = 50""",
)


def test_a_big_model_shows_its_outline_while_its_tensors_are_read(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex, prompt = start_explore(page, lab, "outline", SLOW_DETAILS)
    # The rows are there while the cell still runs; their counts are not, and the view says so.
    expect(treeitem(ex, "0")).to_contain_text("SlowToRead", timeout=30_000)
    assert prompt.inner_text().strip() == "[*]:"
    expect(treeitem(ex, "0").locator(".tx-params")).to_have_text("…")
    # Alike blocks are folded already, and the first levels open without asking the busy kernel.
    treeitem(ex, "2").locator(".tx-caret").click()
    expect(ex.get_by_role("treeitem", name=re.compile(r"^0-29 ×30 Sequential"))).to_be_visible()
    expect(ex.get_by_role("status")).to_have_text("reading the model…")
    expect(ex.get_by_role("tabpanel", name="Overview")).to_have_text("reading the model…")
    ex.screenshot(path=str(shots / "outline_reading.png"))
    # Then the counts, the Overview, and the probe's results.
    expect(treeitem(ex, "0").locator(".tx-params")).to_have_text("40", timeout=30_000)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"), timeout=30_000)
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("Sequential")
    assert errors(page) == []
    ex.screenshot(path=str(shots / "outline_done.png"))
