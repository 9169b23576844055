"""The explorer in marimo: a person opens notebooks/09-marimo.py in `marimo edit`, selects a layer,
reads its Source, edits it in the Form tab, undoes, reads the probe's results and copies the
summary. marimo's anywidget has no `invoke` ("anywidget.invoke not supported in marimo"): every
request goes through custom messages (js/transport.ts), which the root says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import browser_page
from lab import treeitem
from mo_server import Marimo
from playwright.sync_api import Browser, Page, expect

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def marimo(
    chromium: str, static_bundle: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Marimo]:
    with Marimo(tmp_path_factory.mktemp("marimo")) as server:
        yield server


@pytest.fixture
def mo_page(
    browser: Browser, marimo: Marimo, shots: Path, request: pytest.FixtureRequest
) -> Iterator[Page]:
    with browser_page(browser, marimo.url, shots, request) as pg:
        yield pg


def test_marimo_select_source_edit_undo_probe_and_summary(
    mo_page: Page, marimo: Marimo, shots: Path
) -> None:
    page = mo_page
    page.goto(marimo.url)
    # The notebook runs as it opens (the server's settings); the widget is the third cell's value.
    ex = page.locator(".tx-root")
    expect(ex).to_be_visible(timeout=120_000)
    status = ex.get_by_role("status")
    expect(status).to_have_text(re.compile(r"^probe ok"), timeout=120_000)
    expect(ex).to_have_attribute("data-transport", "messages")
    cells = page.locator(".marimo-cell")
    expect(cells).to_have_count(4)
    # The notebook's last cell prints the same summary the Probe tab copies.
    expect(cells.nth(3)).to_contain_text("Total params: 43,226")

    treeitem(ex, "conv1").click()
    expect(treeitem(ex, "conv1")).to_have_attribute("aria-selected", "true")
    ex.get_by_role("tab", name="Source").click()
    expect(ex.get_by_role("tabpanel", name="Source")).to_contain_text("class Conv2d(")

    # Keys typed in the tree stay there: marimo's own shortcuts (new cell, delete cell) never see
    # them, and the arrows move the selection.
    treeitem(ex, "conv1").click()
    tree = ex.get_by_role("tree")
    expect(tree).to_be_focused()
    for key in ("a", "b", "d", "d"):
        page.keyboard.press(key)
    page.keyboard.press("ArrowDown")
    expect(treeitem(ex, "bn1")).to_have_attribute("aria-selected", "true")
    expect(tree).to_be_focused()
    expect(cells).to_have_count(4)
    treeitem(ex, "conv1").click()

    ex.get_by_role("tab", name="Form").click()
    form = ex.get_by_role("tabpanel", name="Form")
    expect(form).to_contain_text("Conv2d(…) at conv1")
    out_channels = ex.get_by_label("out_channels", exact=True)
    expect(out_channels).to_have_value("16")
    out_channels.fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    expect(treeitem(ex, "bn1")).to_contain_text("failed")
    expect(treeitem(ex, "conv1")).to_contain_text("patched")
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "marimo-edit-failed.png"))

    ex.get_by_role("button", name="Undo", exact=True).click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(ex, "conv1")).not_to_contain_text("patched")
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_label("out_channels", exact=True)).to_have_value("16")

    # The probe's results, and the summary copied, shown and downloaded as CSV.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    conv1 = probe.locator("tr", has=page.get_by_role("cell", name="conv1", exact=True))
    expect(conv1).to_contain_text("2×16×32×32")
    probe.get_by_role("button", name="Copy summary").click()
    expect(probe).to_contain_text(re.compile(r"copied \d+ lines"))
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("ResNetIsh: 35 modules; probe ok (fake)"), copied[:200]
    assert "├─conv1 (Conv2d)" in copied and "Total params: 43,226" in copied
    probe.get_by_role("button", name="Show summary").click()
    expect(probe.get_by_label("summary text")).to_contain_text("Total mult-adds:")
    with page.expect_download() as got:
        probe.get_by_role("button", name="Download CSV").click()
    download = got.value
    assert download.suggested_filename == "ResNetIsh-summary.csv"
    lines = Path(download.path()).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("path,name,class,depth") and len(lines) == 1 + 35
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "marimo-probe-summary.png"))


_SLOW_NOTEBOOK = '''\
import marimo

app = marimo.App(width="full")


@app.cell
def _():
    import time

    import torch
    from torch import nn

    import torchxray as tx

    class Slow(nn.Module):
        """A layer whose forward takes 6 s: the probe runs that long."""

        def forward(self, x):
            time.sleep(6)
            return x

    model = nn.Sequential(nn.Linear(4, 8), Slow(), nn.ReLU())
    return model, torch, tx


@app.cell
def _(model, torch, tx):
    ex = tx.explore(model, torch.randn(2, 4))
    ex
    return (ex,)


if __name__ == "__main__":
    app.run()
'''


def test_marimo_shows_the_tree_while_the_probe_runs(
    browser: Browser, tmp_path: Path, shots: Path, request: pytest.FixtureRequest
) -> None:
    """Issue 43 item 14: outside a Jupyter kernel marimo still shows the tree first: the cell
    returns, the view draws, and the probe's results come from a background thread."""
    src = tmp_path / "slow.py"
    src.write_text(_SLOW_NOTEBOOK)
    with Marimo(tmp_path / "server", notebook=src) as server:
        with browser_page(browser, server.url, shots, request) as page:
            page.goto(server.url)
            ex = page.locator(".tx-root")
            expect(ex).to_be_visible(timeout=120_000)
            status = ex.get_by_role("status")
            # The tree, while the 6 s probe still runs: rows to browse, shapes still to come.
            expect(treeitem(ex, "0")).to_contain_text("Linear")
            expect(status).to_have_text(re.compile(r"^probing"))
            expect(ex.get_by_role("button", name="Cancel probe")).to_be_visible()
            treeitem(ex, "0").click()
            ex.get_by_role("tab", name="Source").click()
            expect(ex.get_by_role("tabpanel", name="Source")).to_contain_text("class Linear(")
            expect(status).to_have_text(re.compile(r"^probing"))  # answered while probing
            page.mouse.move(0, 0)
            ex.screenshot(path=str(shots / "marimo-tree-while-probing.png"))
            expect(status).to_have_text(re.compile(r"^probe ok"), timeout=120_000)
            expect(treeitem(ex, "0")).to_contain_text("2×8")
            ex.screenshot(path=str(shots / "marimo-probe-done.png"))
