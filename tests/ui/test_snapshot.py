"""A person opens a shared snapshot with no kernel: they can browse, and actions are disabled."""

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
    menu,
    open_notebook,
    run_all,
    treeitem,
)
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.ui

READ_ONLY = re.compile(r"read-only")


def test_to_html_file_browses_read_only_without_network(
    browser: Browser, tmp_path: Path, shots: Path
) -> None:
    import torchxray as tx
    from torchxray import demo

    model = demo.resnet_ish()
    ex = tx.explore(model, demo.images())
    ex.edit("fc", out_features=100)
    target = tmp_path / "resnet.html"
    ex.to_html(target)
    ex.close()

    context = browser.new_context(viewport={"width": 1300, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    try:
        page.goto(target.as_uri())
        tree = page.get_by_role("tree")
        expect(tree).to_be_visible()
        expect(page.get_by_text(READ_ONLY)).to_be_visible()
        expect(treeitem(tree, "fc")).to_contain_text("2×100")

        # Browse: expand, select, read the panes recorded in the snapshot.
        treeitem(tree, "layer1").locator(".tx-caret").click()
        expect(treeitem(tree, "0").first).to_have_accessible_name(re.compile(r"^0 BasicBlock"))
        treeitem(tree, "conv1").first.click()
        expect(page.get_by_role("tabpanel", name="Overview")).to_contain_text("Conv2d")
        page.get_by_role("tab", name="Source").click()
        expect(page.get_by_role("tabpanel", name="Source")).to_contain_text("class Conv2d(")

        # The graph renderer is inlined too: the MRO draws with no network.
        page.get_by_role("tab", name="MRO").click()
        expect(page.get_by_role("tabpanel", name="MRO").locator("svg")).to_contain_text("Conv2d")

        # Actions are disabled.
        page.get_by_role("tab", name="Form").click()
        expect(page.get_by_role("tabpanel", name="Form")).to_contain_text("Conv2d(…) at conv1")
        expect(page.get_by_role("button", name="Apply")).to_be_disabled()
        expect(page.get_by_role("button", name="Replace with...")).to_be_disabled()
        page.get_by_role("tab", name="History").click()
        history = page.get_by_role("tabpanel", name="History")
        expect(history).to_contain_text("out_features")
        expect(history.get_by_role("button", name="Undo")).to_be_disabled()
        expect(page.get_by_role("button", name="Undo", exact=True).first).to_be_disabled()
        page.screenshot(path=str(shots / "to-html.png"))
    finally:
        context.close()
    remote = [u for u in requests if not u.startswith(("file:", "data:", "blob:"))]
    assert remote == [], f"the standalone page made network requests: {remote}"
    assert dialogs == []
    assert page_errors == []


def test_efficientnet_page_opens_from_a_file_and_a_leaf_graph_says_why_it_is_empty(
    browser: Browser, tmp_path: Path, shots: Path
) -> None:
    """Issue 43 item 11: the packed page (under 1 MB for timm's efficientnet_b0, gzip unpacked by
    the browser) opens from file:// with no network; tree, Source, and a leaf's Graph: one line
    saying why there is no graph, no frame and no zoom or export buttons; a block's Graph draws."""
    import timm
    import torch

    import torchxray as tx

    torch.manual_seed(0)
    model = timm.create_model("efficientnet_b0", pretrained=False).eval()
    ex = tx.explore(model, torch.randn(1, 3, 224, 224))
    target = ex.to_html(tmp_path / "effnet.html")
    ex.close()
    assert target.stat().st_size <= 1_000_000

    context = browser.new_context(viewport={"width": 1300, "height": 800})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page_errors: list[str] = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)))
    page.on("console", lambda m: page_errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(target.as_uri())
        tree = page.get_by_role("tree")
        expect(tree).to_be_visible()
        expect(page.get_by_text(READ_ONLY)).to_be_visible()
        expect(treeitem(tree, "conv_stem")).to_contain_text("1×32×112×112")

        # Tree: open a stage and a block, select a leaf inside it.
        treeitem(tree, "blocks").locator(".tx-caret").click()
        expect(treeitem(tree, "1")).to_be_visible()
        treeitem(tree, "1").locator(".tx-caret").click()
        treeitem(tree, "0").nth(1).locator(".tx-caret").click()
        treeitem(tree, "conv_dw").first.click()
        overview = page.get_by_role("tabpanel", name="Overview")
        expect(overview).to_contain_text("blocks.1.0.conv_dw")

        page.get_by_role("tab", name="Source").click()
        expect(page.get_by_role("tabpanel", name="Source")).to_contain_text("class Conv2d(")

        # A leaf's Graph: one line saying why, no empty frame, no zoom or export buttons.
        page.get_by_role("tab", name="Graph").click()
        graph = page.get_by_role("tabpanel", name="Graph")
        expect(graph).to_contain_text(
            "blocks.1.0.conv_dw has no child modules, so there is no dataflow inside it to draw"
        )
        expect(graph.locator(".tx-gview")).to_be_hidden()
        for name in ("+", "Fit", "SVG", "PNG"):
            expect(graph.get_by_role("button", name=name, exact=True)).to_have_count(0)
        expect(graph.get_by_label("graph depth")).to_have_count(0)
        page.screenshot(path=str(shots / "to-html-effnet-leaf-graph.png"))

        # "Up" draws the block the leaf is in, from the snapshot: the buttons come back, live.
        graph.get_by_role("button", name="Up").click()
        expect(graph).to_contain_text("Dataflow inside blocks.1.0")
        expect(graph.locator("svg g.node").first).to_be_visible()
        expect(graph.get_by_role("button", name="SVG")).to_be_enabled()
        page.screenshot(path=str(shots / "to-html-effnet-block-graph.png"))
    finally:
        context.close()
    remote = [u for u in requests if not u.startswith(("file:", "data:", "blob:"))]
    assert remote == [], f"the standalone page made network requests: {remote}"
    assert page_errors == []


def _luminance(rgb: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", rgb)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_to_html_in_a_dark_browser_fills_the_page_and_draws_the_graph(
    browser: Browser, tmp_path: Path, shots: Path
) -> None:
    import torchxray as tx
    from torchxray import demo

    ex = tx.explore(demo.resnet_ish(), demo.images())
    target = ex.to_html(tmp_path / "dark.html")
    ex.close()
    context = browser.new_context(viewport={"width": 1300, "height": 900}, color_scheme="dark")
    page = context.new_page()
    try:
        page.goto(target.as_uri())
        root = page.locator(".tx-root")
        expect(page.get_by_role("tree")).to_be_visible()
        # The widget takes the page's height, not its 520 px notebook box.
        assert root.bounding_box()["height"] > 800  # type: ignore[index]
        # Source: dark code box, light text (names and brackets were near-white on light).
        treeitem(page, "conv1").click()
        page.get_by_role("tab", name="Source").click()
        code = page.locator(".tx-source pre")
        expect(code).to_contain_text("class Conv2d(")
        box = code.evaluate("e => getComputedStyle(e.closest('.tx-src') || e).backgroundColor")
        name = page.locator(".tx-source .n").first.evaluate("e => getComputedStyle(e).color")
        assert _luminance(box) < 0.3 and _luminance(name) > 0.6, (box, name)
        page.screenshot(path=str(shots / "to-html-dark-source.png"))
        # The Graph tab from the recorded probe: a module's dataflow, no kernel needed.
        treeitem(page, "layer1").click()
        page.get_by_role("tab", name="Graph").click()
        graph = page.get_by_role("tabpanel", name="Graph")
        expect(graph.locator("svg g.node").first).to_be_visible()
        expect(graph).not_to_contain_text("no kernel")
        page.screenshot(path=str(shots / "to-html-dark-graph.png"))
    finally:
        context.close()


def test_notebook_saved_with_widget_state_reopens_read_only(
    page: Page, lab: Lab, shots: Path
) -> None:
    nb = lab.write_notebook(
        "saved.ipynb",
        "import torchxray as tx\nfrom torchxray import demo",
        "ex = tx.explore(demo.resnet_ish(), demo.images())\nex.save_snapshot()\nex",
    )
    open_notebook(page, lab, nb, "saved")
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []
    expect(explorer(page, 1).get_by_role("tree")).to_be_visible()

    # Save with the widget state (Settings > Save Widget State Automatically, then File > Save).
    toggle = "Save Widget State Automatically"
    page.get_by_role("menubar").get_by_role("menuitem", name="Settings", exact=True).click()
    item = page.get_by_role("menuitem", name=re.compile(toggle))
    checked = "lm-mod-toggled" in (item.get_attribute("class") or "")
    page.keyboard.press("Escape")
    if not checked:
        menu(page, "Settings", toggle)
    menu(page, "File", "Save Notebook")
    expect(page.get_by_role("tab", name=re.compile("saved.ipynb"))).not_to_have_class(
        re.compile(r"jp-mod-dirty")
    )
    lab.shutdown_kernels()  # the kernel that held the model is gone

    # Reopen: the widget comes back from the saved state, browsable, with actions disabled.
    page.reload()
    cells = code_cells(page)
    expect(cells).to_have_count(2)
    ex = explorer(page, 1)
    expect(ex.get_by_role("tree")).to_be_visible(timeout=60_000)
    expect(ex.get_by_text(READ_ONLY)).to_be_visible(timeout=60_000)
    treeitem(ex, "fc").click()
    expect(treeitem(ex, "fc")).to_have_attribute("aria-selected", "true")
    ex.get_by_role("tab", name="Overview").click()
    expect(ex.get_by_role("tabpanel", name="Overview")).to_contain_text("Linear")
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_role("tabpanel", name="Form")).to_contain_text("Linear(…) at fc")
    expect(ex.get_by_role("button", name="Apply")).to_be_disabled()
    page.screenshot(path=str(shots / "saved-state.png"))
