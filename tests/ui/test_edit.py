"""A person changes a layer from the widget, sees what breaks, undoes it, and replaces a layer."""

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
    open_explorer,
    run_cell,
    treeitem,
)
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SHOW = "ex = tx.explore(model, x)\nex"


def test_form_edit_breaks_the_probe_then_undo(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "edit", SETUP, SHOW, "print(model.conv1)")
    status = ex.get_by_role("status")

    treeitem(ex, "conv1").click()
    expect(treeitem(ex, "conv1")).to_have_attribute("aria-selected", "true")

    # Source: the class of the selected module, with where it lives.
    ex.get_by_role("tab", name="Source").click()
    source = ex.get_by_role("tabpanel", name="Source")
    expect(source).to_contain_text("class Conv2d(")
    expect(source).to_contain_text("torch/nn/modules/conv.py")

    # Form: prefilled from the live module.
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_role("tabpanel", name="Form")).to_contain_text("Conv2d(…) at conv1")
    out_channels = ex.get_by_label("out_channels", exact=True)
    expect(out_channels).to_have_value("16")
    expect(ex.get_by_label("in_channels", exact=True)).to_have_value("3")

    # A value the constructor cannot take is refused next to its field; nothing is applied.
    out_channels.fill("-4")
    ex.get_by_role("button", name="Apply").click()
    # The message is the field's accessible description (aria-describedby), shown beside it.
    expect(out_channels).to_have_accessible_description(re.compile(r"-4"))
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(ex, "conv1")).not_to_contain_text("patched")
    # A kernel with four sizes would build a Conv2d with a 6-d weight: refused, with the reason.
    kernel = ex.get_by_label("kernel_size", exact=True)
    kept = kernel.input_value()
    kernel.fill("(3, 3, 3, 3)")
    ex.get_by_role("button", name="Apply").click()
    expect(kernel).to_have_accessible_description(re.compile(r"tuple of 2 ints, got 4"))
    expect(treeitem(ex, "conv1")).not_to_contain_text("patched")
    page.screenshot(path=str(shots / "edit-kernel-refused.png"))
    kernel.fill(kept)

    # 24 channels: the next BatchNorm still expects 16, and the failure names it.
    out_channels.fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    expect(treeitem(ex, "bn1")).to_contain_text("failed")
    page.screenshot(path=str(shots / "edit-failed.png"))
    # The widget alone, an edited layer and the layer it broke (the README's picture is made the
    # same way by docs/screenshots.py: `make screenshots`).
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "edit-failed-widget.png"))
    # The kernel's model really changed: a later cell sees the new layer.
    assert "Conv2d(3, 24" in run_cell(page, 2)

    ex.get_by_role("tab", name="History").click()
    history = ex.get_by_role("tabpanel", name="History")
    expect(history).to_contain_text("out_channels")
    # The History tab's own Undo (the header and the failure status have one too).
    history.get_by_role("button", name="Undo").click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(history.get_by_role("button", name="Redo")).to_be_enabled()
    assert "Conv2d(3, 16" in run_cell(page, 2)

    # The form shows the restored module.
    ex.get_by_role("tab", name="Form").click()
    expect(ex.get_by_label("out_channels", exact=True)).to_have_value("16")
    assert errors(page) == []


def test_replace_with_a_class_from_the_catalog_shows_the_probe_diff(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "replace", SETUP, SHOW, "print(type(model.fc).__name__)")
    status = ex.get_by_role("status")

    # Drop the classifier head to get features: fc (Linear) -> Identity.
    treeitem(ex, "fc").click()
    ex.get_by_role("tab", name="Form").click()
    # Read which module the form is for before acting on it, as a person would.
    expect(ex.get_by_role("tabpanel", name="Form")).to_contain_text("Linear(…) at fc")
    ex.get_by_role("button", name="Replace with...").click()
    search = ex.get_by_role("searchbox", name="Search classes")
    search.fill("Identity")
    ex.get_by_role("button", name="Identity", exact=True).click()
    ex.get_by_role("button", name="Replace", exact=True).click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    expect(treeitem(ex, "fc")).to_have_accessible_name(re.compile(r"^fc Identity"))
    assert run_cell(page, 2).strip() == "Identity"

    # The probe tab marks what changed against the previous probe, with the old shape.
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    changed = probe.locator("tr", has=page.get_by_role("cell", name="fc", exact=True))
    expect(changed).to_have_attribute("title", "changed")
    expect(changed).to_contain_text("Identity")
    expect(changed).to_contain_text("2×32")  # now
    expect(changed).to_contain_text("2×10")  # before
    unchanged = probe.locator("tr", has=page.get_by_role("cell", name="avgpool", exact=True))
    expect(unchanged).to_have_attribute("title", "same")
    changed.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "replace-diff.png"))

    # The summary as torchinfo lays it out, for the model as it is now: copied, and as CSV.
    probe.get_by_role("button", name="Copy summary").click()
    expect(probe).to_contain_text(re.compile(r"copied \d+ lines"))
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("ResNetIsh: 35 modules; probe ok (fake)"), copied[:200]
    assert "└─fc (Identity)" in copied and "Total params: 42,896" in copied
    with page.expect_download() as got:
        probe.get_by_role("button", name="Download CSV").click()
    assert got.value.suggested_filename == "ResNetIsh-summary.csv"
    csv_lines = Path(got.value.path()).read_text(encoding="utf-8").splitlines()
    assert len(csv_lines) == 1 + 35 and csv_lines[-1].startswith("fc,fc,Identity,1,")
    assert errors(page) == []
