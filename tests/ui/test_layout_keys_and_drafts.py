"""The panes' layout, the keys and the drafts, each walked as a person does in JupyterLab: the
Source tab marks forward's lines one under another near the top, letter keys stay in the widget
and Undo is in the header, a form's draft belongs to one module, the Probe table fits its pane and
leads to the tree, tree names are whole and extra_repr breaks between tokens, the MRO graph follows
the dark theme. Each of these once failed for a person using the widget.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import (
    RESNET_SETUP as SETUP,
)
from lab import (
    Lab,
    errors,
    explorer,
    open_explorer,
    run_cell,
    set_theme,
    settled,
    treeitem,
)
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

SHOW = "ex = tx.explore(model, x)\nex"

# Where the Source tab's lines, marked lines and sticky header sit, relative to its scroller.
SOURCE_GEOMETRY = """pane => {
  const scroller = pane.closest('.tx-panels').getBoundingClientRect();
  const top = r => r.getBoundingClientRect().top - scroller.top;
  const numbers = [...pane.querySelectorAll('.tx-source .linenos')].map(top);
  const marked = [...pane.querySelectorAll('.tx-source .hll')];
  const header = pane.querySelector('.tx-srctop, .tx-srchead').getBoundingClientRect();
  return {
    numbers,
    marked: marked.map(top),
    codeWidth: pane.querySelector('.tx-source pre').scrollWidth,
    paneWidth: scroller.width,
    paneHeight: scroller.height,
    headerTop: header.top - scroller.top,
    headerBottom: header.bottom - scroller.top,
  };
}"""


def test_source_marks_forward_lines_one_under_another_near_the_top(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "source", SETUP, SHOW)
    treeitem(ex, "conv1").click()
    ex.get_by_role("tab", name="Source").click()
    pane = ex.get_by_role("tabpanel", name="Source")
    expect(pane).to_contain_text("class Conv2d(")
    expect(pane.locator(".tx-source .hll").first).to_be_visible()
    page.wait_for_timeout(300)  # the pane scrolls once the code is laid out
    g = pane.evaluate(SOURCE_GEOMETRY)
    page.screenshot(path=str(shots / "source-forward.png"))

    # One line under another: every line number sits one line below the one before, marked or not
    # (the marked ones were inline blocks side by side on one line, `def forward` next to `return`).
    steps = [b - a for a, b in zip(g["numbers"], g["numbers"][1:], strict=False)]
    assert len(g["marked"]) >= 2, g["marked"]
    assert min(steps) > 8 and max(steps) - min(steps) < 2, steps
    # Not one endless line: the code is at most a little wider than its longest line.
    assert g["codeWidth"] < 2 * g["paneWidth"], g
    # The first forward line is near the top of the pane, under the file:line header, in view.
    assert g["headerTop"] >= -1 and g["headerBottom"] <= g["marked"][0], g
    assert g["marked"][0] < g["paneHeight"] / 3, g
    expect(pane.get_by_text(re.compile(r"conv\.py:\d+"))).to_be_in_viewport()
    # Scrolled further down, the header stays (sticky).
    pane.locator("xpath=ancestor::div[contains(@class,'tx-panels')]").evaluate(
        "el => el.scrollBy(0, 200)"
    )
    g = pane.evaluate(SOURCE_GEOMETRY)
    assert -9 <= g["headerTop"] <= 1, g


def cell_kinds(page: Page) -> list[str]:
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    return cells.evaluate_all(
        "cs => cs.map(c => c.classList.contains('jp-MarkdownCell') ? 'markdown' : 'code')"
    )


def test_keys_stay_in_the_widget_and_undo_is_at_hand(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "keys", SETUP, SHOW, "print(model.conv1)")
    status = ex.get_by_role("status")
    tree = ex.get_by_role("tree")
    before = cell_kinds(page)

    # A person clicks a row and types: b, m, d d and z are JupyterLab's cell commands.
    treeitem(ex, "conv1").click()
    expect(treeitem(ex, "conv1")).to_have_attribute("aria-selected", "true")
    expect(tree).to_be_focused()
    for key in ("b", "m", "d", "d", "z"):
        page.keyboard.press(key)
        page.wait_for_timeout(300)
        assert cell_kinds(page) == before, f"{key!r} reached the notebook"
        expect(tree).to_be_focused()
    # The widget's own keys still work.
    page.keyboard.press("ArrowDown")
    expect(treeitem(ex, "bn1")).to_have_attribute("aria-selected", "true")

    # Shift+Enter in another cell still runs it.
    page.keyboard.press("Escape")
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(2)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".jp-OutputArea")).to_contain_text("Conv2d(3, 16")

    # Break the model from the Form tab: the failure status offers Undo right there.
    treeitem(ex, "conv1").click()
    ex.get_by_role("tab", name="Form").click()
    ex.get_by_label("out_channels", exact=True).fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    undo_here = ex.get_by_role("button", name="Undo last patch")
    expect(undo_here).to_be_visible()
    page.screenshot(path=str(shots / "failure-undo.png"))
    undo_here.click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(undo_here).to_be_hidden()

    # Undo / Redo in the header, whatever tab is open.
    ex.get_by_role("tab", name="Overview").click()
    redo = ex.get_by_role("button", name="Redo", exact=True)
    expect(redo).to_be_enabled()
    redo.click()
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    undo = ex.get_by_role("button", name="Undo", exact=True)
    expect(undo).to_be_enabled()

    # Ctrl+Z / Ctrl+Shift+Z inside the widget undo and redo the patch...
    treeitem(ex, "fc").click()
    page.keyboard.press("Control+z")
    expect(status).to_have_text(re.compile(r"^probe ok"))
    page.keyboard.press("Control+Shift+z")
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    # ...and only there: in a notebook cell they are the editor's.
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+z")
    page.wait_for_timeout(1000)
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    undo.click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    assert "Conv2d(3, 16" in run_cell(page, 2)
    assert errors(page) == []


def test_form_drafts_belong_to_one_module(page: Page, lab: Lab) -> None:
    ex = open_explorer(page, lab, "drafts", SETUP, SHOW)
    overview = ex.get_by_role("tabpanel", name="Overview")
    treeitem(ex, "conv1").click()
    ex.get_by_role("tab", name="Form").click()
    out_channels = ex.get_by_label("out_channels", exact=True)
    expect(out_channels).to_have_value("16")
    out_channels.fill("-4")

    # Look at another module from the Overview, come back: the draft did not wait there.
    ex.get_by_role("tab", name="Overview").click()
    treeitem(ex, "bn1").click()
    expect(overview).to_contain_text("BatchNorm2d")
    treeitem(ex, "conv1").click()
    expect(overview).to_contain_text("Conv2d")
    ex.get_by_role("tab", name="Form").click()
    expect(out_channels).to_have_value("16")

    # Reset puts the live values back.
    out_channels.fill("99")
    ex.get_by_label("kernel_size", exact=True).fill("(5, 5)")
    ex.get_by_role("button", name="Reset").click()
    expect(out_channels).to_have_value("16")
    expect(ex.get_by_label("kernel_size", exact=True)).not_to_have_value("(5, 5)")
    assert errors(page) == []


def overflow(el: Locator) -> int:
    return el.evaluate("el => el.scrollWidth - el.clientWidth")


def test_probe_table_fits_and_leads_to_the_tree(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "probefit", SETUP, SHOW)
    # The tree's columns are named.
    head = ex.locator(".tx-treehead")
    expect(head).to_contain_text("output shape")
    fc_shape = treeitem(ex, "fc").locator(".tx-shape")
    expect(fc_shape).to_have_text("2×10")
    rights = settled(
        lambda: [
            el.evaluate("e => e.getBoundingClientRect().right")
            for el in (head.locator(".tx-shape"), fc_shape)
        ],
        lambda r: abs(r[0] - r[1]) < 2,
    )
    assert abs(rights[0] - rights[1]) < 2, rights

    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    expect(probe.get_by_role("columnheader", name="FLOPs")).to_be_visible()
    # Every column in view: no sideways scroll in the panel.
    assert overflow(ex.locator(".tx-panels")) <= 1
    expect(probe.get_by_role("columnheader", name="FLOPs")).to_be_in_viewport(ratio=1)
    page.screenshot(path=str(shots / "probe-fits.png"))

    # layer1's two blocks are alike: one row until opened, as in the tree.
    fold = probe.get_by_role("row", name=re.compile(r"layer1\.0–1 ×2"))
    expect(fold).to_have_attribute("aria-expanded", "false")
    expect(probe.get_by_role("cell", name="layer1.1.conv1", exact=True)).to_have_count(0)
    fold.click()
    expect(fold).to_have_attribute("aria-expanded", "true")
    expect(probe.get_by_role("cell", name="layer1.1.conv1", exact=True)).to_be_visible()

    # A click on a row selects that module in the tree (opening its parents).
    probe.get_by_role("cell", name="layer2.0.conv2", exact=True).click()
    row = ex.get_by_role("tree").locator("[role=treeitem][aria-selected=true]")
    expect(row).to_have_accessible_name(re.compile(r"^conv2 Conv2d"))
    ex.get_by_role("tab", name="Overview").click()
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("layer2.0.conv2")
    assert errors(page) == []


LONG_NAMES = """\
import torch
import torchxray as tx
from collections import OrderedDict
from torch import nn

block = nn.Sequential(OrderedDict(
    input_layernorm=nn.LayerNorm(64, eps=1e-05, elementwise_affine=True, bias=True),
    self_attention_output_projection_layer=nn.Linear(64, 64),
))
model = nn.Sequential(OrderedDict(decoder_stack=nn.Sequential(OrderedDict(
    transformer_layers=nn.Sequential(OrderedDict(first_decoder_block=block))))))
path = "decoder_stack.transformer_layers.first_decoder_block"
ex = tx.explore(model, torch.randn(2, 16, 64))
ex.select(path + ".self_attention_output_projection_layer")
ex"""


def test_tree_names_are_whole_and_extra_repr_breaks_between_tokens(
    page: Page, lab: Lab, shots: Path
) -> None:
    # A narrower window, where the tree's half of the widget cannot hold these names.
    page.set_viewport_size({"width": 1150, "height": 900})
    ex = open_explorer(page, lab, "names", LONG_NAMES, cell=0)
    row = treeitem(ex, "self_attention_output_projection_layer")
    expect(row).to_have_attribute("aria-selected", "true")
    name = row.locator(".tx-name")
    path = "decoder_stack.transformer_layers.first_decoder_block"
    expect(name).to_have_attribute("title", f"{path}.self_attention_output_projection_layer")
    page.wait_for_timeout(300)
    page.screenshot(path=str(shots / "tree-names.png"))
    assert overflow(name) <= 0, "the name is cut off"

    # extra_repr wraps between tokens: JupyterLab's output area breaks a <pre> anywhere.
    treeitem(ex, "input_layernorm").click()
    overview = ex.get_by_role("tabpanel", name="Overview")
    expect(overview).to_contain_text("elementwise_affine=True")
    extra = overview.locator("pre")
    assert extra.evaluate("e => getComputedStyle(e).wordBreak") == "normal"
    assert errors(page) == []


LUMINANCE = """el => {
  const rgb = s => (s.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  const shape = el.querySelector('polygon, ellipse, path');
  const text = el.querySelector('text');
  return {fill: lum(rgb(getComputedStyle(shape).fill)), text: lum(rgb(getComputedStyle(text).fill))};
}"""


def test_mro_graph_follows_the_dark_theme(page: Page, lab: Lab, shots: Path) -> None:
    open_explorer(
        page,
        lab,
        "darkmro",
        "import torchxray as tx\nfrom torchxray import demo",
        "ex = tx.explore(demo.tiny_transformer(), demo.tokens())\nex",
    )
    set_theme(page, "JupyterLab Dark")
    try:
        ex = explorer(page, 1)
        treeitem(ex, "blocks").click()
        ex.get_by_role("tab", name="MRO").click()
        graph = ex.get_by_role("tabpanel", name="MRO").locator("svg")
        expect(graph).to_contain_text("ModuleList")
        nodes = graph.locator("g.node")
        expect(nodes.first).to_be_visible()
        page.screenshot(path=str(shots / "dark-mro-graph.png"))
        for i in range(nodes.count()):
            colours = nodes.nth(i).evaluate(LUMINANCE)
            # Dark nodes with light text, as the rest of the widget in this theme.
            assert colours["fill"] < 0.4 and colours["text"] > 0.6, colours
    finally:
        set_theme(page, "JupyterLab Light")  # the theme is a user setting shared by later flows
