"""A person breaks a layer deep inside the tree and undoes it, in JupyterLab: the failing module's
collapsed parents are marked and the red status leads to it; the rows they opened by hand stay open
through Apply and Undo; what the failed probe did not reach is one closed line, not a wall of
paths; and after Undo the Probe table compares with the run that passed: nothing changed, nothing
"(new)"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import RESNET_SETUP, Lab, open_explorer, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui


def _row(ex: Locator, path: str) -> Locator:
    """A row by its whole path (its name cell's title), e.g. "layer1.0.bn1"."""
    return ex.get_by_role("treeitem").filter(has=ex.page.locator(f".tx-name[title='{path}']"))


def test_a_failure_in_collapsed_rows_then_undo(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "collapsed", RESNET_SETUP, "ex = tx.explore(model, x)\nex")
    status = ex.get_by_role("status")
    # Rows opened by hand, which Apply and Undo must leave open.
    treeitem(ex, "layer2").locator(".tx-caret").click()
    _row(ex, "layer2.0").locator(".tx-caret").click()
    expect(_row(ex, "layer2.0.downsample")).to_be_visible()

    # Break layer1.0.conv1 from its form, then close layer1 again.
    treeitem(ex, "layer1").locator(".tx-caret").click()
    _row(ex, "layer1.0").locator(".tx-caret").click()
    _row(ex, "layer1.0.conv1").click()
    ex.get_by_role("tab", name="Form").click()
    ex.get_by_label("out_channels", exact=True).fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"probe failed at layer1\.0\.bn1\b"))
    treeitem(ex, "layer1").locator(".tx-caret").click()
    expect(_row(ex, "layer1.0")).to_have_count(0)
    # Its collapsed parents say where it is.
    for path in ("layer1",):
        expect(_row(ex, path).locator(".tx-mark-inside_error")).to_have_text("fails inside")
    expect(
        ex.get_by_role("treeitem", name=re.compile(r"^\(model\)")).locator(".tx-mark-inside_error")
    ).to_be_visible()
    # The rows opened by hand are still open.
    expect(_row(ex, "layer2.0.downsample")).to_be_visible()
    page.screenshot(path=str(shots / "collapsed-marks.png"))

    # The red status leads to the module that failed.
    status.click()
    bn1 = _row(ex, "layer1.0.bn1")
    expect(bn1).to_have_attribute("aria-selected", "true")
    expect(bn1.locator(".tx-mark-error")).to_have_text("failed")

    # What the probe did not reach: one closed line, its modules listed when opened.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    missed = probe.locator("details.tx-notreached")
    expect(missed.locator("summary")).to_have_text(
        re.compile(r"^not reached: \d+ modules \(the probe stopped at layer1\.0\.bn1\)$")
    )
    chips = missed.locator(".tx-chip")
    expect(chips.first).to_be_hidden()
    missed.locator("summary").click()
    expect(chips.filter(has_text=re.compile(r"^layer2$"))).to_have_count(1)
    assert chips.count() < 12  # the outermost only: layer2, not each of its modules
    page.screenshot(path=str(shots / "collapsed-not-reached.png"))

    # Undo: the model that last passed again, compared with that run.
    ex.get_by_role("button", name="Undo", exact=True).click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(probe.locator(".tx-buttons .tx-muted").first).to_have_text(re.compile(r"mode fake$"))
    expect(probe.locator("thead")).not_to_contain_text("before")
    expect(probe.locator("tbody")).not_to_contain_text("(new)")
    expect(_row(ex, "layer2.0.downsample")).to_be_visible()
    page.screenshot(path=str(shots / "collapsed-after-undo.png"))
