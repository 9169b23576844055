"""A person reads a block's class hierarchy, then copies the patch history as code and replays it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import (
    RESNET_SETUP as SETUP,
)
from lab import (
    Lab,
    code_cells,
    errors,
    open_explorer,
    run_cell,
    treeitem,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui


def test_mro_graph_then_history_code_replays(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(
        page, lab, "panes", SETUP, "ex = tx.explore(model, x)\nex", "model = demo.resnet_ish()\n"
    )
    status = ex.get_by_role("status")

    # MRO of a residual block: drawn as an SVG graph (the renderer loads on first use).
    treeitem(ex, "layer1").locator(".tx-caret").click()
    treeitem(ex, "0").first.click()
    expect(treeitem(ex, "0").first).to_have_accessible_name(re.compile(r"^0 BasicBlock"))
    ex.get_by_role("tab", name="MRO").click()
    mro = ex.get_by_role("tabpanel", name="MRO")
    graph = mro.locator("svg")
    expect(graph).to_be_visible(timeout=60_000)
    expect(graph).to_contain_text("BasicBlock")
    expect(graph).to_contain_text("Module")
    page.screenshot(path=str(shots / "mro.png"))
    # Clicking a class in the graph shows its source.
    mro.get_by_label("source of Module").click()
    expect(mro).to_contain_text("class Module")

    # The fake probe counts FLOPs; a real probe (runs the model) measures time per module instead.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    expect(probe.get_by_role("columnheader", name="FLOPs")).to_be_visible()
    probe.get_by_label("mode", exact=True).select_option("real")
    probe.get_by_role("button", name="Run probe").click()
    expect(probe).to_contain_text("mode real")
    expect(probe.get_by_role("columnheader", name="time")).to_be_visible()
    expect(probe.get_by_role("columnheader", name="FLOPs")).to_have_count(0)
    expect(status).to_have_text(re.compile(r"^probe ok"))
    page.screenshot(path=str(shots / "probe-real.png"))

    # Make a patch from the Form tab: widen the classifier.
    treeitem(ex, "fc").click()
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_role("tabpanel", name="Form")).to_contain_text("Linear(…) at fc")
    ex.get_by_label("out_features", exact=True).fill("100")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(ex, "fc")).to_contain_text("2×100")

    # History lists it; Copy code puts the replayable code on the clipboard.
    ex.get_by_role("tab", name="History").click()
    history = ex.get_by_role("tabpanel", name="History")
    expect(history.get_by_role("listitem")).to_have_count(1)
    expect(history.get_by_role("listitem")).to_contain_text("fc")
    ex.get_by_role("button", name="Copy code").click()
    expect(history).to_contain_text("copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "model.fc" in copied and "100" in copied, copied

    # Paste it under `model = demo.resnet_ish()` in the next cell and run it on the fresh model.
    cell = code_cells(page).nth(2)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Control+v")
    expect(cell.locator(".jp-InputArea-editor")).to_contain_text("model.fc")
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("print(model.fc.out_features, model(x).shape)")
    out = run_cell(page, 2)
    assert "100 torch.Size([2, 100])" in out, out
    page.screenshot(path=str(shots / "history-replayed.png"))
    assert errors(page) == []
