"""A model written in the notebook, as a person explores it in JupyterLab: a cell ending in
``ex.to_html(path)`` shows the path, not the page; its rows name the dict it returns (logits,
past_key_values...) and the tabs stay on one row; Source names the cell; the Probe table breaks
shapes between dimensions; the Graph draws the residual sum a block returns, the whole model to a
depth with zoom and SVG/PNG export, and the MRO graph's labels are readable; the call tree has
times after a real probe; the Memory tab says which figure is the answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, code_cells, open_explorer, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

NET = """\
import torch
from torch import nn
import torchxray as tx

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.SiLU()
        self.drop_path = nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.act(self.bn(self.conv(x)))
        x = self.drop_path(x) + shortcut  # as timm's EfficientNet blocks end
        return x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.head = nn.Linear(8, 10)
        self.kv = nn.ModuleList(nn.Linear(8, 4) for _ in range(5))

    def forward(self, x):
        h = self.blocks(self.stem(x))
        pooled = h.mean((2, 3))
        cache = [(kv(pooled), kv(pooled) * 2) for kv in self.kv]
        return {"logits": self.head(pooled), "past_key_values": cache, "hidden": h}

model = Net().eval()
x = torch.randn(1, 3, 224, 224)"""

SHOW = "ex = tx.explore(model, x)\nex"
SAVE = 'ex.to_html("net.html")'

# Each piece of a shape cell between the <wbr> breaks sits on one line: a wrap never cuts a shape.
PIECES_WHOLE = (
    """td => [...td.querySelectorAll('.tx-nobr')].every(s => s.getClientRects().length === 1)"""
)


def _text_px(scope: Locator) -> float:
    """The height of the graph's first node label, as drawn (CSS px)."""
    return float(
        scope.locator("svg g.node text").first.evaluate("t => t.getBoundingClientRect().height")
    )


def test_a_notebook_model_outputs_graph_and_source(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "round-two", NET, SHOW, SAVE)
    # The cell ending in to_html shows the path written, not megabytes of page.
    saved = code_cells(page).nth(2).locator(".jp-OutputArea").inner_text()
    assert "net.html" in saved and len(saved) < 200, saved[:300]

    # The root row names its outputs by key: the first and how many more; its tooltip all.
    root = ex.get_by_role("treeitem", name=re.compile(r"^\(model\) Net"))
    shape = root.locator(".tx-shape")
    # (the name gives way first where the row is short of room: the shape is never cut)
    expect(shape).to_have_text(re.compile(r"^(logits: )?1×10 \+11$"))
    title = shape.get_attribute("title") or ""
    assert "past_key_values[0][0]: 1×4" in title and "hidden: 1×8×224×224" in title, title
    # However long the outputs, the tabs keep their rows (they wrap, never scroll: layout_fit).
    tops = ex.get_by_role("tab").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().top)")
    assert len(set(tops)) <= 2, tops
    page.screenshot(path=str(shots / "r2-named-outputs.png"))

    # The class defined in cell 1: Source names the cell, not the kernel's temporary file.
    root.click()
    ex.get_by_role("tab", name="Source").click()
    head = ex.get_by_role("tabpanel", name="Source").locator(".tx-srchead")
    expect(head).to_have_text(re.compile(r"__main__\.Net — In \[1\], line \d+$"))
    assert "ipykernel_" in (head.get_attribute("title") or "")

    # The Probe table: named outputs, shapes broken only between dimensions.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    out = probe.locator("tbody tr").first.locator("td.tx-shapes").nth(1)
    # Several outputs: the first and "+N more", which lists them all in place.
    expect(out).to_contain_text("logits: 1×10 +11 more")
    out.get_by_role("button", name="+11 more").click()
    expect(out).to_contain_text("past_key_values[0][0]: 1×4")
    cells = probe.locator("td.tx-shapes")
    assert cells.count() > 10
    for i in range(cells.count()):
        assert cells.nth(i).evaluate(PIECES_WHOLE), cells.nth(i).inner_text()
    page.screenshot(path=str(shots / "r2-probe-table.png"))

    # The Graph of a block: the sum it returns joins its input to its output (the skip).
    treeitem(ex, "blocks").locator(".tx-caret").click()
    treeitem(ex, "0").click()
    ex.get_by_role("tab", name="Graph").click()
    graph = ex.get_by_role("tabpanel", name="Graph")
    expect(graph.locator("svg g.node").first).to_be_visible()
    edges = graph.locator("svg g.edge title").evaluate_all("ts => ts.map(t => t.textContent)")
    assert "input->output" in edges, edges
    skip = graph.locator("svg g.edge").filter(has=page.locator("title", has_text="input->output"))
    assert "via add" in skip.first.evaluate("g => g.innerHTML")
    assert _text_px(graph) >= 11
    page.screenshot(path=str(shots / "r2-graph-skip.png"))

    # The whole model, to every depth: blocks as clusters, zoomed, exported.
    root.click()
    expect(graph).to_contain_text("Dataflow inside (model)")
    graph.get_by_label("graph depth").select_option("0")
    expect(graph.locator("svg g.cluster").first).to_be_visible()
    assert graph.locator("svg g.cluster").count() >= 3  # blocks, blocks.0, blocks.1, kv
    assert _text_px(graph) >= 11  # 100%: labels at their full size
    graph.get_by_role("button", name="+", exact=True).click()
    expect(graph.locator(".tx-gview-level")).to_have_text("125%")
    page.screenshot(path=str(shots / "r2-graph-whole.png"))
    graph.get_by_role("button", name="Fit").click()
    with page.expect_download() as svg_file:
        graph.get_by_role("button", name="SVG").click()
    svg = Path(svg_file.value.path()).read_text(encoding="utf-8")
    assert svg.startswith("<?xml") and "<svg" in svg and "blocks.0.conv" in svg
    assert svg_file.value.suggested_filename == "torchxray-graph-model-depth0.svg"
    with page.expect_download() as png_file:
        graph.get_by_role("button", name="PNG").click()
    assert Path(png_file.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The MRO graph at 100%: labels readable (they were 7 px, shrunk to fit).
    treeitem(ex, "0").click()
    ex.get_by_role("tab", name="MRO").click()
    mro = ex.get_by_role("tabpanel", name="MRO")
    expect(mro.locator("svg g.node").first).to_be_visible()
    assert _text_px(mro) >= 11
    page.screenshot(path=str(shots / "r2-mro.png"))

    # After a real probe the call tree has each call's time.
    ex.get_by_role("tab", name="Probe").click()
    probe.get_by_label("mode", exact=True).select_option("real")
    probe.get_by_role("button", name="Run probe").click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    probe.get_by_role("button", name="Call tree").click()
    times = probe.locator(".tx-flowline .tx-flowfig")
    expect(times.first).to_have_text(re.compile(r"^\d+\.\d{3} ms$"))
    page.screenshot(path=str(shots / "r2-call-tree.png"))

    # The Memory tab's answer for the model is its peak, said first.
    ex.get_by_role("treeitem", name=re.compile(r"^\(model\) Net")).click()
    ex.get_by_role("tab", name="Memory").click()
    memory = ex.get_by_role("tabpanel", name="Memory")
    memory.get_by_role("switch").check()
    expect(memory.locator("h4").first).to_have_text("(model): training step, adamw")
    expect(memory.locator(".tx-mem-answer")).to_have_text(
        re.compile(r"^[\d.]+ \w+ model peak in a training step \(adamw\): what a device needs")
    )
    expect(memory).to_contain_text("never all held at once")
    page.screenshot(path=str(shots / "r2-memory.png"))
