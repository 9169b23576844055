"""A person opens a model whose forward keeps what it saw and counts its calls (issue 39): the
module's row says "writes" (its accessible name lists self.seen and self.calls), and its Overview
lists each write, saying torchxray put them back and torch.compile has to handle them too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
import torch.nn as nn
import torchxray as tx


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.seen = []
        self.calls = 0

    def forward(self, x):
        self.seen.append(x.mean())
        self.calls += 1
        return self.lin(x)


model = nn.Sequential(Counting(), nn.ReLU())
x = torch.randn(2, 4)"""


def test_a_forward_that_writes_to_itself(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "writes", SETUP, "ex = tx.explore(model, x)\nex")
    row = treeitem(ex, "0")
    expect(row).to_have_accessible_name("0 Counting, writes self.seen, self.calls")
    badge = row.locator(".tx-mark-writes")
    expect(badge).to_have_text("writes")
    expect(badge).to_have_attribute("title", re.compile(r"^writes self\.seen, self\.calls"))
    # Only the module that wrote: its child and sibling have no badge.
    expect(treeitem(ex, "1").locator(".tx-mark-writes")).to_have_count(0)

    row.click()
    ex.get_by_role("tab", name="Overview").click()
    section = ex.get_by_role("tabpanel", name="Overview").get_by_role(
        "region", name="Its forward writes"
    )
    expect(section).to_contain_text(
        "torchxray put these back after the probe; torch.compile has to handle them too"
    )
    expect(section.get_by_role("listitem")).to_have_text(
        ["writes 0.seen (container: 1 item added)", "writes 0.calls (counter: 0 -> 1)"]
    )
    section.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "forward-writes.png"))
