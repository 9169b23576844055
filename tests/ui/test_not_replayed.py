"""A person opens a model whose repeated blocks cannot be replayed by the fake probe (each has a
hook of its own): the header's status says which blocks ran each time and why (issue 58), as
text, next to "probe ok"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
import torch
import torch.nn as nn
import torchxray as tx

blocks = [nn.Sequential(nn.Linear(8, 8), nn.GELU()) for _ in range(6)]
for b in blocks:
    b.register_forward_hook(lambda m, i, o: None)  # e.g. a user's activation logger
model = nn.Sequential(*blocks)
x = torch.randn(2, 8)"""


def test_the_status_says_why_blocks_were_not_replayed(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "not_replayed", SETUP, "ex = tx.explore(model, x)\nex")
    status = ex.get_by_role("status")
    expect(status).to_have_text(
        re.compile(
            r"^probe ok: 19 modules; Sequential blocks 0 and 5 more ran each time, not replayed: "
            r"it has hooks of its own"
        )
    )
    page.screenshot(path=str(shots / "not-replayed.png"))
