"""Edits, History and the filter, each walked as a person does in JupyterLab: an edit that changes
nothing records nothing and a huge one asks first, History's numbers match the replay code after an
undo, the Overview names inputs by argument, "names only" filters by each module's own name, and
"Replace with..." lists the classes that fit the selected module first.

Each once failed for a person: an unchanged edit logged "kernel_size=(3, 3) -> (3, 3)", a huge
out_channels was built without a question, History said 1 where the code said 2 after an undo,
the inputs had no argument names, and the model's own blocks came before the layers that fit.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import RESNET_SETUP as SETUP
from lab import Lab, errors, open_explorer, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

SHOW = "ex = tx.explore(model, x)\nex"


def _form(ex: Locator, path: str) -> None:
    treeitem(ex, path).click()
    ex.get_by_role("tab", name="Form").click()


def _history(ex: Locator) -> Locator:
    ex.get_by_role("tab", name="History").click()
    return ex.get_by_role("tabpanel", name="History")


def test_unchanged_and_huge_edits_record_nothing(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "noop", SETUP, SHOW)
    _form(ex, "conv1")
    alert = ex.get_by_role("tabpanel", name="Form").get_by_role("alert").last

    # The same kernel size typed without the space: nothing changed, nothing logged.
    kernel = ex.get_by_label("kernel_size", exact=True)
    expect(kernel).to_have_value("(3, 3)")
    kernel.fill("(3,3)")
    ex.get_by_role("button", name="Apply").click()
    expect(alert).to_contain_text("nothing changed at 'conv1': kernel_size=(3, 3)")

    # A size that would take 10 GiB is estimated first and asked about, not built.
    _form(ex, "conv1")
    ex.get_by_label("out_channels", exact=True).fill("100000000")
    ex.get_by_role("button", name="Apply").click()
    expect(alert).to_contain_text(re.compile(r"would hold \d+\.\d GiB of parameters"))
    expect(ex.get_by_role("button", name="Build anyway")).to_be_visible()
    page.screenshot(path=str(shots / "huge-edit.png"))
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    history = _history(ex)
    expect(history).to_contain_text("No patches yet")
    assert errors(page) == []


def test_history_numbers_match_the_code_after_an_undo(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "numbers", SETUP, SHOW)
    status = ex.get_by_role("status")
    _form(ex, "conv1")
    ex.get_by_label("out_channels", exact=True).fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"probe failed at bn1\b"))
    ex.get_by_role("button", name="Undo", exact=True).click()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    _form(ex, "bn1")
    ex.get_by_label("eps", exact=True).fill("0.001")
    ex.get_by_role("button", name="Apply").click()
    expect(status).to_have_text(re.compile(r"^probe ok"))

    history = _history(ex)
    item = history.locator("ol.tx-log > li")
    expect(item).to_have_count(1)
    code = history.locator("pre.tx-code")
    expect(code).to_contain_text("# 1. edit bn1")
    page.screenshot(path=str(shots / "history-numbers.png"))
    # The list's number is the code's number; the code starts with the patch, not helpers.
    assert item.evaluate("li => li.value") == 1
    text = code.inner_text()
    assert "# 2." not in text and "def _place" not in text, text
    assert text.index("from torchxray.replay import") < text.index("# 1. edit bn1") < 250, text
    assert errors(page) == []


def test_reading_argument_names_names_only_filter_and_fitting_classes(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "reading", SETUP, SHOW)
    overview = ex.get_by_role("tabpanel", name="Overview")
    expect(overview).to_contain_text("x: 2×3×32×32 float32")

    # "layer1" matches every module under layer1 by path; by name, only layer1 itself.
    ex.get_by_label("Filter modules").fill("layer1")
    count = ex.locator(".tx-filterbar .tx-count")
    expect(count).to_have_text(re.compile(r"^(1[0-9]|[2-9]\d) matches"))
    ex.get_by_label("names only").check()
    expect(count).to_have_text("1 match")
    page.screenshot(path=str(shots / "filter-names-only.png"))
    ex.get_by_label("names only").uncheck()
    ex.get_by_label("Filter modules").fill("")

    # Replace fc (a Linear): the classes that fit it come first, not ResNetIsh and its blocks.
    _form(ex, "fc")
    ex.get_by_role("button", name="Replace with...").click()
    entries = ex.locator(".tx-catalog .tx-entry")
    expect(entries.first).to_have_text("Linear")
    first = entries.all_inner_texts()[:4]
    assert set(first) == {"Linear", "Bilinear", "LazyLinear", "Identity"}, first
    page.screenshot(path=str(shots / "catalog-fit.png"))
    assert errors(page) == []
