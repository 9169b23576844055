"""A person's model annotates forward with shapes, and a layer returns something else: the tree
marks that layer with a warning badge (not a failure), and its Overview says what the annotation
promised and what the probe saw."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, errors, explorer, hide_file_browser, open_notebook, run_all, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
from torch import nn
from jaxtyping import Float
import torchxray as tx

class WrongPool(nn.Module):
    # Says it keeps the batch and channels, but forgot to pool the width.
    def forward(self, x: Float[torch.Tensor, "b c h w"]) -> Float[torch.Tensor, "b c"]:
        return x.mean(dim=2)

model = nn.Sequential(nn.Conv2d(3, 4, 1), WrongPool(), nn.Flatten())
"""


def test_a_broken_annotation_is_a_warning_badge(page: Page, lab: Lab, shots: Path) -> None:
    nb = lab.write_notebook("contract.ipynb", SETUP, "tx.explore(model, torch.randn(2, 3, 5, 6))")
    open_notebook(page, lab, nb, "contract")
    hide_file_browser(page)
    run_all(page)
    assert errors(page) == []

    ex = explorer(page, 1)
    # The probe went through: a contract is a warning, not a failure.
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    row = treeitem(ex, "1")
    badge = row.locator(".tx-mark-contract")
    expect(badge).to_have_text("contract")
    expect(row.locator(".tx-mark-error")).to_have_count(0)
    expect(treeitem(ex, "0").locator(".tx-mark-contract")).to_have_count(0)
    row.click()
    note = ex.get_by_role("tabpanel", name="Overview").get_by_role("note")
    expect(note).to_have_text("return value: forward says 'b c' but got 3 dims (2, 4, 6)")
    ex.screenshot(path=str(shots / "contract_warning.png"))
