"""A person selects a module deep in the model (blocks.1.1), opens the Graph tab and picks "show:
the whole model": the graph is the model's, from its root (the stem, every block, the head), with
the selected module outlined in it, not the dataflow inside blocks.1.1 alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import STAGED_NET as MODEL
from lab import Lab, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui


def test_the_whole_model_is_drawn_from_the_root(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(
        page, lab, "graph-whole", MODEL, "ex = tx.explore(model, torch.randn(1, 3, 16, 16))\nex"
    )
    treeitem(ex, "blocks").locator(".tx-caret").click()
    ex.get_by_role("treeitem", name=re.compile(r"^1 Sequential")).locator(".tx-caret").click()
    ex.get_by_role("treeitem", name=re.compile(r"^1 Block")).click()
    ex.get_by_role("tab", name="Graph").click()
    graph = ex.get_by_role("tabpanel", name="Graph")
    expect(graph).to_contain_text("Dataflow inside blocks.1.1")
    expect(graph.locator("svg g[data-path='blocks.1.1.conv']")).to_be_visible()
    expect(graph.locator("svg g[data-path='stem']")).to_have_count(0)

    graph.get_by_label("graph depth").select_option(label="the whole model")
    expect(graph).to_contain_text("Dataflow of the whole model · blocks.1.1 outlined")
    for path in ("stem", "blocks.0.0.conv", "blocks.1.0", "blocks.1.1.conv", "pool", "head"):
        expect(graph.locator(f"svg g[data-path='{path}']")).to_have_count(1)
    expect(graph.locator("svg g.tx-current")).to_have_attribute("data-path", "blocks.1.1")
    expect(graph.get_by_role("button", name="Up")).to_have_count(0)
    graph.get_by_role("button", name="Fit").click()
    page.screenshot(path=str(shots / "graph-whole-model.png"))

    # A module picked in the tree meanwhile: the same whole graph, that module outlined.
    treeitem(ex, "head").click()
    expect(graph).to_contain_text("Dataflow of the whole model · head outlined")
    expect(graph.locator("svg g.tx-current")).to_have_attribute("data-path", "head")
