"""A person checks notebooks/12-export.ipynb's planted model for deployment in JupyterLab: Check
lists the three problems on their modules, the rows carry the ONNX verdict, a failing op's line
opens the Source tab there, an edit (the gate off) makes the check stale, and Check again says
what changed: the data-dependent branch is fixed and torch.export passes; fixing the other two
(a form edit, Replace with... Identity) lets every target take the model, and drift colours the
tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, errors, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
import torchxray as tx
from torchxray import demo

model = demo.export_net()
x = demo.sequences()"""
SHOW = 'ex = tx.explore(model, x, mode="real")\nex'


def test_check_follow_an_op_to_its_line_edit_and_see_what_changed(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "export", SETUP, SHOW)
    ex.get_by_role("tab", name="Export").click()
    tab = ex.get_by_role("tabpanel", name="Export")
    expect(tab).to_contain_text("Not checked yet.")
    tab.get_by_role("button", name="Check", exact=True).click()
    expect(tab.locator(".tx-cverdict")).to_have_text("3 issues block export:", timeout=120_000)
    issues = tab.locator(".tx-xissues > li")
    expect(issues).to_have_count(3)
    expect(issues.nth(0).locator(".tx-cmodule")).to_have_text("mlp (GatedMLP)")
    expect(issues.nth(0)).to_contain_text("data-dependent control flow")
    expect(issues.nth(1).locator(".tx-cmodule")).to_have_text("proj (OrthoLinear)")
    expect(issues.nth(1)).to_contain_text("aten.linalg_qr.default")
    expect(issues.nth(2).locator(".tx-cmodule")).to_have_text("mixer (RunningMax)")
    # The rows carry the ONNX verdict: ✗ where an op fails below, ✓ where all translate.
    expect(treeitem(ex, "proj")).to_contain_text("✗")
    expect(treeitem(ex, "head")).to_contain_text("✓")
    # ...and torch.export's, once picked.
    tab.get_by_label("mark the tree's rows with").select_option("export")
    expect(treeitem(ex, "mlp")).to_contain_text("✗")
    expect(treeitem(ex, "proj")).to_contain_text("✓")

    # A failing op's module selects its row; its line opens the Source tab, marked.
    issues.nth(1).locator(".tx-cmodule").click()
    expect(treeitem(ex, "proj")).to_have_attribute("aria-selected", "true")
    expect(tab.locator(".tx-xselected")).to_contain_text("onnx: fails")
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "export-three-issues.png"))
    issues.nth(1).locator(".tx-cwhere").click()
    source = ex.get_by_role("tabpanel", name="Source")
    expect(source.locator(".tx-source .hll")).to_contain_text("torch.linalg.qr")

    # Turn the gate off (an edit): the check is stale; Check again says what changed.
    treeitem(ex, "mlp").click()
    ex.get_by_role("tab", name="Form").click()
    form = ex.get_by_role("tabpanel", name="Form")
    form.get_by_label("gate", exact=True).uncheck()
    form.get_by_role("button", name="Apply").click()
    ex.get_by_role("tab", name="Export").click()
    expect(tab.locator(".tx-xstale")).to_contain_text("The model changed since this check")
    tab.locator(".tx-xstale").get_by_role("button", name="Check again").click()
    expect(tab.locator(".tx-cverdict")).to_have_text("2 issues block export:", timeout=120_000)
    changes = tab.get_by_role("list", name="what changed")
    expect(changes).to_contain_text("export: fails -> ok")
    expect(changes).to_contain_text("fixed: [export] mlp (GatedMLP): data-dependent control flow")
    expect(tab.locator(".tx-xstale")).to_have_count(0)
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "export-what-changed.png"))

    # Fix the other two (QR off in the form, the running max replaced by Identity): every target
    # takes the model, and drift colours the tree.
    treeitem(ex, "proj").click()
    ex.get_by_role("tab", name="Form").click()
    form.get_by_label("orthogonal", exact=True).uncheck()
    form.get_by_role("button", name="Apply").click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    treeitem(ex, "mixer").click()
    expect(form).to_contain_text("RunningMax(…) at mixer")
    ex.get_by_role("button", name="Replace with...").click()
    ex.get_by_role("searchbox", name="Search classes").fill("Identity")
    ex.get_by_role("button", name="Identity", exact=True).click()
    ex.get_by_role("button", name="Replace", exact=True).click()
    expect(treeitem(ex, "mixer")).to_have_accessible_name(re.compile(r"^mixer Identity"))
    ex.get_by_role("tab", name="Export").click()
    tab.get_by_role("button", name="Check again").first.click()
    expect(tab.locator(".tx-cverdict")).to_have_text(
        "Every target checked takes the model (export, onnx).", timeout=120_000
    )
    expect(changes).to_contain_text("onnx: fails -> ok")
    tab.get_by_role("button", name="colour the tree by drift").click()
    expect(ex.get_by_label("colour the tree by")).to_have_value("drift")
    swatch = treeitem(ex, "head").locator(".tx-heat")
    expect(swatch).to_have_attribute(
        "title", re.compile(r"^drift \(ONNX vs eager, Export tab\): .* \(max abs\)$")
    )
    expect(ex.locator(".tx-legend")).to_contain_text("drift (ONNX vs eager, Export tab)")
    page.mouse.move(0, 0)
    shot = shots / "export-tab.png"
    ex.screenshot(path=str(shot))
    assert errors(page) == []
