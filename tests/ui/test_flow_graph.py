"""A person follows the execution flow: where a module is called from (the link opens the
caller's source at that line), the Probe tab's call tree, and the Graph tab's dataflow of a
residual block (its skip edge), in the light and the dark theme."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import RESNET_SETUP as SETUP
from lab import Lab, open_explorer, set_theme, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

# Luminance (0-1) of a graph node's shape fill and its text; computed colours may be rgb() or
# color(srgb r g b) with 0-1 channels (what color-mix gives).
LUMINANCE = """el => {
  const rgb = s => {
    const v = (s.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
    return s.startsWith('color(') ? v.map(x => x * 255) : v;
  };
  const lum = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  const shape = el.querySelector('polygon, ellipse, path');
  const text = el.querySelector('text');
  return {fill: lum(rgb(getComputedStyle(shape).fill)), text: lum(rgb(getComputedStyle(text).fill))};
}"""


def _selected(ex: Locator) -> Locator:
    return ex.get_by_role("treeitem", selected=True)


def test_call_site_call_tree_and_dataflow_graph(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "flowgraph", SETUP, "ex = tx.explore(model, x)\nex")

    # The Overview says where layer1 is called from; the link opens the caller's source there.
    treeitem(ex, "layer1").click()
    overview = ex.get_by_role("tabpanel", name="Overview")
    site = overview.locator(".tx-site")
    expect(site).to_have_text(
        re.compile(r"^ResNetIsh\.forward, line \d+: x = self\.layer2\(self\.layer1\(x\)\)$")
    )
    page.screenshot(path=str(shots / "flow-callsite.png"))
    line = int(re.search(r"line (\d+)", site.inner_text()).group(1))  # type: ignore[union-attr]
    site.get_by_role("button").click()
    source = ex.get_by_role("tabpanel", name="Source")
    expect(ex.get_by_role("tab", name="Source")).to_have_attribute("aria-selected", "true")
    expect(source.locator(".tx-srchead")).to_contain_text("torchxray.demo.ResNetIsh")
    marked = source.locator(".tx-source.tx-callsite .hll")
    expect(marked).to_have_count(1)
    expect(marked).to_contain_text("x = self.layer2(self.layer1(x))")
    expect(marked).to_contain_text(str(line))
    expect(source).to_contain_text(f"line {line} (the call) is marked")
    expect(marked).to_be_in_viewport()
    page.screenshot(path=str(shots / "flow-source-line.png"))

    # The Probe tab's call tree: indented calls; a click selects the module in the tree.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    probe.get_by_role("button", name="Call tree").click()
    calls = probe.get_by_role("list", name="call tree")
    # Each line ends with its FLOPs (the fake probe's; a real probe's time instead).
    first = calls.get_by_role("listitem").first
    expect(first).to_have_text(re.compile(r"^\(model\) ResNetIsh\s*[\d.]+M FLOPs$"))
    fc = calls.get_by_role("listitem").filter(
        has_text=re.compile(r"^fc Linear\s*[\d.]+[kMB]? FLOPs$")
    )
    expect(fc).to_have_attribute("data-depth", "1")
    page.screenshot(path=str(shots / "flow-call-tree.png"))
    fc.click()
    expect(_selected(ex)).to_have_accessible_name(re.compile(r"^fc Linear"))

    # The Graph tab on a residual block: its skip edge from the block's input to the last ReLU.
    # The Graph tab draws the selected module's children; a double click goes into one.
    treeitem(ex, "layer1").click()
    ex.get_by_role("tab", name="Graph").click()
    graph = ex.get_by_role("tabpanel", name="Graph")
    svg = graph.locator("svg")
    expect(svg).to_be_visible(timeout=60_000)
    expect(graph).to_contain_text("Dataflow inside layer1")
    svg.get_by_role("button", name="select layer1.1").dblclick()
    expect(graph).to_contain_text("Dataflow inside layer1.1")
    expect(_selected(ex)).to_have_accessible_name(re.compile(r"^1 BasicBlock"))
    relu = svg.get_by_role("button", name="select layer1.1.relu")
    relu_id = relu.locator("title").text_content()
    skip = svg.locator("g.edge").filter(has=page.locator("title", has_text=f"input->{relu_id}"))
    expect(skip).to_have_count(1)
    tip = skip.locator("a").first.get_attribute("xlink:title") or ""
    assert "via add" in tip, tip
    page.screenshot(path=str(shots / "flow-graph.png"))
    # A click on a node selects its module; the graph stays on the block.
    svg.get_by_role("button", name="select layer1.1.conv2").click()
    expect(_selected(ex)).to_have_accessible_name(re.compile(r"^conv2 Conv2d"))
    expect(graph).to_contain_text("Dataflow inside layer1.1")
    conv2 = svg.get_by_role("button", name="select layer1.1.conv2")
    expect(conv2).to_have_class(re.compile(r"\btx-current\b"))

    # The dark theme: dark nodes with light text, as the rest of the widget.
    set_theme(page, "JupyterLab Dark")
    try:
        nodes = graph.locator("svg g.node")
        expect(nodes.first).to_be_visible()
        for i in range(nodes.count()):
            colours = nodes.nth(i).evaluate(LUMINANCE)
            assert colours["fill"] < 0.4 and colours["text"] > 0.6, colours
        page.screenshot(path=str(shots / "flow-graph-dark.png"))
    finally:
        set_theme(page, "JupyterLab Light")  # the theme is a user setting shared by later flows


EVIL = """\
import torch
import torch.nn as nn
import torchxray as tx


class Evil(nn.Module):
    def forward(self, x):
        return x * 2


Evil.__name__ = Evil.__qualname__ = "<img src=x onerror=alert(1)>"
model = nn.Sequential()
model.add_module("<script>alert(2)</script>", nn.Linear(4, 4))
model.add_module('q"\\\\n', Evil())
x = torch.randn(2, 4)"""


def test_graph_shows_hostile_names_as_text(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "flowevil", EVIL, "ex = tx.explore(model, x)\nex")
    ex.get_by_role("tab", name="Graph").click()
    svg = ex.get_by_role("tabpanel", name="Graph").locator("svg")
    expect(svg).to_be_visible(timeout=60_000)
    expect(svg).to_contain_text("<script>alert(2)</script>")
    expect(svg).to_contain_text("<img src=x onerror=alert(1)>")
    expect(svg).to_contain_text('q"\\n')
    assert svg.locator("script, img, foreignObject").count() == 0
    page.screenshot(path=str(shots / "flow-graph-names.png"))
    # The page fixture fails the flow if a dialog opened (model text run as code).
