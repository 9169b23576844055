"""A person checks notebooks/10-compile.ipynb's model for torch.compile in JupyterLab: Check finds
two graph breaks, the tree folds to the rows that break, a break leads to its row and its line
in the Source tab, and Replace with... of the logging GELU re-runs the check by itself: one break
is left."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, errors, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
import torchxray as tx
from torchxray import demo

model = demo.compile_net()
ids = demo.tokens()"""
SHOW = 'ex = tx.explore(model, ids, mode="real")\nex'


def test_check_fold_follow_a_break_and_fix_it(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "compile", SETUP, SHOW)
    ex.get_by_role("tab", name="Compile").click()
    tab = ex.get_by_role("tabpanel", name="Compile")
    expect(tab).to_contain_text("Not checked yet.")
    tab.get_by_role("button", name="Check", exact=True).click()
    expect(tab.locator(".tx-cverdict")).to_have_text(
        "2 graph breaks, in forward order:", timeout=60_000
    )
    breaks = tab.locator(".tx-break")
    expect(breaks).to_have_count(2)
    expect(breaks.nth(0).locator(".tx-cmodule")).to_have_text("mlp (CheckedMLP)")
    expect(breaks.nth(1).locator(".tx-cmodule")).to_have_text("mlp.act (LoggedGELU)")
    expect(breaks.nth(1)).to_contain_text("logging.Logger method not supported")
    page_link = breaks.nth(1).get_by_role("link", name="torch's page on this break")
    expect(page_link).to_have_attribute("rel", re.compile("noopener"))
    expect(tab.get_by_role("button", name="Check again")).to_be_visible()
    # The row whose own forward breaks carries the badge.
    expect(treeitem(ex, "mlp")).to_contain_text("breaks")

    # Fold the tree to the breaking rows: the model, mlp and mlp.act, nothing else.
    tab.get_by_label("fold the tree to breaking rows").check()
    expect(ex.get_by_role("treeitem")).to_have_count(3)
    expect(ex.locator(".tx-filterbar .tx-count")).to_have_text("folded to breaking rows (2)")
    expect(treeitem(ex, "embed")).to_have_count(0)
    ex.screenshot(path=str(shots / "compile-two-breaks.png"))

    # A break leads to its row, and its line to the Source tab, marked.
    breaks.nth(1).locator(".tx-cmodule").click()
    expect(treeitem(ex, "act")).to_have_attribute("aria-selected", "true")
    breaks.nth(1).locator(".tx-cwhere").click()
    source = ex.get_by_role("tabpanel", name="Source")
    expect(source.locator(".tx-source .hll")).to_contain_text("_log.debug")
    expect(source).to_contain_text("(the graph break) is marked")
    expect(source).to_contain_text("graph break: logging.Logger method not supported")
    page.screenshot(path=str(shots / "compile-source.png"))

    # Replace the logging GELU with torch's: the check runs again after the patch by itself.
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_role("tabpanel", name="Form")).to_contain_text("LoggedGELU(…) at mlp.act")
    ex.get_by_role("button", name="Replace with...").click()
    ex.get_by_role("searchbox", name="Search classes").fill("GELU")
    ex.get_by_role("button", name="GELU", exact=True).click()
    ex.get_by_role("button", name="Replace", exact=True).click()
    ex.get_by_role("tab", name="Compile").click()
    expect(tab.locator(".tx-cverdict")).to_have_text(
        "1 graph break, in forward order:", timeout=60_000
    )
    expect(breaks).to_have_count(1)
    expect(breaks.nth(0).locator(".tx-cmodule")).to_have_text("mlp (CheckedMLP)")
    # The fold follows: mlp.act breaks no more.
    expect(ex.get_by_role("treeitem")).to_have_count(2)
    expect(ex.locator(".tx-filterbar .tx-count")).to_have_text("folded to breaking rows (1)")
    page.mouse.move(0, 0)
    shot = shots / "compile-tab.png"
    ex.screenshot(path=str(shot))
    # "show all" ends the fold and unticks its option.
    ex.get_by_role("button", name="show all").click()
    expect(tab.get_by_label("fold the tree to breaking rows")).not_to_be_checked()
    expect(treeitem(ex, "embed")).to_be_visible()
    assert errors(page) == []
