"""A saved notebook reopened without its kernel shows a read-only tree, not "model not found"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import RESNET_SETUP, Lab, code_cells, menu, open_explorer
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui


def test_a_reopened_notebook_shows_the_saved_tree_without_a_kernel(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "saved", RESNET_SETUP, "ex = tx.explore(model, x)\nex")
    # While the widget is live, its stand-in stays hidden.
    stand_in = code_cells(page).nth(1).locator(".tx-static")
    expect(stand_in).to_be_hidden()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))

    menu(page, "File", "Save Notebook")
    page.wait_for_timeout(1000)  # the save request reaches the server
    lab.shutdown_kernels()
    page.reload()
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()

    stand_in = code_cells(page).nth(1).locator(".tx-static")
    expect(stand_in).to_be_visible()
    expect(stand_in).to_contain_text("torchxray Explorer: ResNetIsh, 35 modules")
    expect(stand_in).to_contain_text("conv1")
    expect(stand_in).to_contain_text("2×16×32×32")  # the probe's shapes, as saved
    # The widget that cannot be drawn says nothing in the way.
    expect(page.get_by_text("model not found")).to_be_hidden()
    # Rows open and close without a kernel.
    layer1 = stand_in.locator("summary", has_text=re.compile(r"^layer1 "))
    layer1.click()
    page.screenshot(path=str(shots / "saved-view.png"))
