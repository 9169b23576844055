"""A person opens the tour notebook, runs it, and finds their way around the model's tree."""

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
    treeitem,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui


def test_tour_notebook_runs_and_the_tree_can_be_explored(page: Page, lab: Lab, shots: Path) -> None:
    open_notebook(page, lab, "01-explore.ipynb", "explore")
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []

    ex = explorer(page)
    tree = ex.get_by_role("tree")
    expect(tree).to_be_visible()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(ex, "(model)")).to_have_attribute("aria-expanded", "true")
    for name in ("conv1", "bn1", "layer1", "layer2", "fc"):
        expect(treeitem(tree, name).first).to_be_visible()

    # The notebook's last cell ran ex.select("layer2.0.conv1"): the view shows Python's choice.
    selected = tree.locator("[role=treeitem][aria-selected=true]")
    expect(selected).to_have_count(1)
    expect(selected).to_have_accessible_name(re.compile(r"^conv1 Conv2d"))
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("layer2.0.conv1")

    # Expand layer1 from its caret: its two blocks appear below it.
    layer1 = treeitem(tree, "layer1")
    expect(layer1).to_have_attribute("aria-expanded", "false")
    rows = tree.get_by_role("treeitem")
    before = rows.count()
    layer1.locator(".tx-caret").click()
    expect(layer1).to_have_attribute("aria-expanded", "true")
    expect(rows).to_have_count(before + 2)
    expect(layer1.locator("xpath=following-sibling::*[1]")).to_have_accessible_name(
        re.compile(r"^0 BasicBlock")
    )

    # Filter: only matches and their ancestors stay; the count says how many matched (the
    # substring is in the paths of downsample and of its two children).
    search = ex.get_by_role("searchbox", name="Filter modules")
    search.fill("downsample")
    expect(treeitem(tree, "downsample")).to_have_count(1)
    expect(treeitem(tree, "fc")).to_have_count(0)
    expect(ex.locator(".tx-filterbar .tx-count")).to_have_text(re.compile(r"^\s*3 match"))
    expect(tree.get_by_role("treeitem")).to_have_count(6)  # root, layer2, 0, downsample, 0, 1

    # Select the match: the Overview follows.
    treeitem(tree, "downsample").click()
    expect(treeitem(tree, "downsample")).to_have_attribute("aria-selected", "true")
    overview = ex.get_by_role("tabpanel", name="Overview")
    expect(overview).to_contain_text("layer2.0.downsample")
    expect(overview).to_contain_text("Sequential")

    # Clearing the filter brings every row back, the selection kept.
    search.fill("")
    expect(treeitem(tree, "fc")).to_have_count(1)
    expect(tree.locator("[role=treeitem][aria-selected=true]")).to_have_accessible_name(
        re.compile(r"^downsample ")
    )

    # Keyboard: Right opens a row, Down moves to (and selects) its first child, Enter toggles it.
    layer2 = treeitem(tree, "layer2")
    layer2.click()
    expect(layer2).to_have_attribute("aria-selected", "true")
    if layer2.get_attribute("aria-expanded") == "true":
        tree.press("ArrowLeft")
        expect(layer2).to_have_attribute("aria-expanded", "false")
    tree.press("ArrowRight")
    expect(layer2).to_have_attribute("aria-expanded", "true")
    tree.press("ArrowDown")
    block = layer2.locator("xpath=following-sibling::*[1]")
    expect(block).to_have_accessible_name(re.compile(r"^0 BasicBlock"))
    expect(block).to_have_attribute("aria-selected", "true")
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("layer2.0")
    was_open = block.get_attribute("aria-expanded") == "true"
    tree.press("Enter")
    expect(block).to_have_attribute("aria-expanded", "false" if was_open else "true")
    tree.press("Enter")
    expect(block).to_have_attribute("aria-expanded", "true" if was_open else "false")

    ex.scroll_into_view_if_needed()
    page.mouse.move(0, 0)
    page.screenshot(path=str(shots / "explore.png"))


def test_seventy_billion_parameter_llm_folds_its_layers(page: Page, lab: Lab, shots: Path) -> None:
    open_notebook(page, lab, "03-probe.ipynb", "probe")
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []

    ex = explorer(page)  # the last cell: the meta-device Llama
    tree = ex.get_by_role("tree")
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(tree, "(model)")).to_contain_text("71B")
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("70,553,706,496")
    layers = treeitem(tree, "layers")
    layers.locator(".tx-caret").click()
    # 80 identical decoder layers are one row until opened.
    fold = tree.get_by_role("treeitem", name=re.compile(r"×80 LlamaDecoderLayer"))
    expect(fold).to_have_count(1)
    # (model), embed_tokens, layers, the fold, norm, lm_head
    expect(tree.get_by_role("treeitem")).to_have_count(6)
    fold.click()
    expect(treeitem(tree, "79")).to_have_count(0)  # paged, not all 80 at once in the DOM...
    expect(treeitem(tree, "0")).to_have_accessible_name(re.compile(r"^0 LlamaDecoderLayer"))
    page.screenshot(path=str(shots / "llm.png"))


@pytest.mark.parametrize("name", ["02-edit-hyperparameters.ipynb", "04-replace-layers.ipynb"])
def test_other_notebooks_run_and_show_their_widgets(page: Page, lab: Lab, name: str) -> None:
    open_notebook(page, lab, name, name.split("-")[0])
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []
    widgets = page.locator(".tx-root")
    expect(widgets.first).to_be_visible()
    for i in range(widgets.count()):
        expect(widgets.nth(i).get_by_role("tree")).to_be_visible()
        expect(widgets.nth(i).get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
