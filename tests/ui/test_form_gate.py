"""A person edits layers whose forms cannot be exact, the model itself, and a config with long
field names: the form says before Apply what a rebuild would get wrong, Apply is
refused until they choose "Apply anyway", the model's own form applies, and no two labels read
the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import dataclasses
import torch
import torchxray as tx
from torch import nn


class Tagged(nn.Module):
    def __init__(self, channels: int = 32, tag: str = "wide", dropout: float = 0.0):
        super().__init__()
        self.norm = nn.GroupNorm(8 if len(tag) == 6 else 32, channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.conv(self.norm(x)))


@dataclasses.dataclass
class AttnConfig:
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128


class Attn(nn.Module):
    def __init__(self, config: AttnConfig):
        super().__init__()
        self.config = config
        self.bias = nn.Embedding(config.relative_attention_num_buckets, 4)
        self.max_distance = config.relative_attention_max_distance

    def forward(self, x):
        return x


class Net(nn.Module):
    def __init__(self, width: int = 32, depth: int = 1):
        super().__init__()
        self.block = Tagged(width, tag="narrow")
        self.attn = Attn(AttnConfig())
        self.body = nn.Sequential(*[nn.Conv2d(width, width, 1) for _ in range(depth)])

    def forward(self, x):
        return self.body(self.attn(self.block(x)))


model = Net()
x = torch.randn(1, 32, 4, 4)"""

SHOW = "ex = tx.explore(model, x)\nex"


def test_inexact_form_then_root_form_then_labels(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "forms-exact", SETUP, SHOW)
    status = ex.get_by_role("status")
    panel = ex.get_by_role("tabpanel", name="Form")

    # The model's own form applies: a new model bound to the explorer.
    treeitem(ex, "(model)").click()
    ex.get_by_role("tab", name="Form").click()
    expect(panel).to_contain_text("Net(…) at (model)")
    expect(panel).not_to_contain_text("inexact")
    ex.get_by_label("depth", exact=True).fill("2")
    ex.get_by_role("button", name="Apply", exact=True).click()
    expect(treeitem(ex, "body")).to_be_visible()
    treeitem(ex, "body").click()
    expect(ex.get_by_role("treeitem", name=re.compile(r"^1 Conv2d"))).to_be_visible()
    expect(status).to_have_text(re.compile(r"^probe ok"))
    page.screenshot(path=str(shots / "forms-root.png"))

    # The block's form cannot be exact: it says which part, before Apply.
    treeitem(ex, "block").click()
    ex.get_by_role("tab", name="Form").click()
    expect(panel).to_contain_text("Tagged(…) at block")
    expect(panel).to_contain_text("inexact: norm would be GroupNorm(32, 32")
    ex.get_by_label("dropout", exact=True).fill("0.1")
    ex.get_by_role("button", name="Apply", exact=True).click()
    # Refused: what would change, and the choice to apply anyway; nothing was patched.
    expect(panel).to_contain_text("nothing was changed")
    anyway = ex.get_by_role("button", name="Apply anyway")
    expect(anyway).to_be_visible()
    expect(treeitem(ex, "block")).not_to_contain_text("patched")
    page.screenshot(path=str(shots / "forms-inexact.png"))
    anyway.click()
    expect(treeitem(ex, "block")).to_contain_text("patched")
    expect(status).to_have_text(re.compile(r"^probe ok"))

    # A config's fields: whole names, never two labels alike.
    treeitem(ex, "attn").click()
    ex.get_by_role("tab", name="Form").click()
    buckets = ex.get_by_label("relative_attention_num_buckets", exact=True)
    distance = ex.get_by_label("relative_attention_max_distance", exact=True)
    expect(buckets).to_have_value("32")
    expect(distance).to_have_value("128")
    labels = panel.locator("label.tx-label").all_inner_texts()
    assert (
        "relative_attention_num_buckets" in labels and "relative_attention_max_distance" in labels
    )
    assert len(labels) == len(set(labels)), labels
    page.screenshot(path=str(shots / "forms-labels.png"))
