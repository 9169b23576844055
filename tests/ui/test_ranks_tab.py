"""A person looks at an FSDP2 plan in JupyterLab's Ranks tab: the rank selector (arrow keys typed
into it stay in the widget) moves from rank 0 to rank 3 and the uneven shard of a 10-row Linear
goes from 3 rows to 1; the tree badges the sharded rows; an Apply makes the plan stale, and
"Plan again" plans the model as it is now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, code_cells, errors, open_explorer, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

SETUP = """\
from collections import OrderedDict

import torch
from torch import nn
from torch.distributed.fsdp import fully_shard

import torchxray as tx

model = nn.Sequential(OrderedDict(fc1=nn.Linear(16, 10), act=nn.ReLU(), head=nn.Linear(10, 4)))
x = torch.randn(2, 16)


def shard(model, mesh):
    fully_shard(model.fc1, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(x,))"""
SHOW = "ex = tx.explore(model, x, ranks=plan)\nex"


def test_switch_ranks_see_the_shard_change_then_plan_again(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "ranks", SETUP, SHOW)
    cells = code_cells(page).count()
    # The rows that hold sharded tensors carry the badge.
    expect(treeitem(ex, "fc1").locator(".tx-badge-sharded")).to_have_text("sharded")
    expect(treeitem(ex, "act").locator(".tx-badge-sharded")).to_have_count(0)
    ex.get_by_role("tab", name="Ranks").click()
    tab = ex.get_by_role("tabpanel", name="Ranks")
    expect(tab.locator(".tx-rverdict")).to_have_text(re.compile(r"^4 ranks over mesh dp=4"))
    fc1 = tab.locator("tbody[data-path='fc1']")
    expect(fc1.locator(".tx-rshape").first).to_have_text("3×16 uneven")
    expect(fc1).to_contain_text("(Shard(dim=0),)")
    # fc1 gathers its shards in the forward and its backward (the last to begin) reduce-scatters.
    expect(fc1.locator(".tx-rcomm").filter(has_text="forward all_gather")).to_have_count(1)
    expect(fc1.locator(".tx-rcomm").filter(has_text="backward reduce_scatter")).to_have_count(1)
    expect(tab.locator(".tx-rmem tbody tr")).to_have_count(4)

    # Arrow keys in the rank selector: rank 3 holds the one row left (10 = 3 + 3 + 3 + 1).
    rank = tab.get_by_label("rank", exact=True)
    rank.click()
    for _ in range(3):
        rank.press("ArrowUp")
    expect(rank).to_have_value("3")
    expect(tab).to_contain_text("What rank 3 holds and sends")
    expect(fc1.locator(".tx-rshape").first).to_have_text("1×16 uneven")
    expect(tab.locator(".tx-rmem tr[aria-current=true] td").first).to_have_text("3")
    assert code_cells(page).count() == cells  # the keys stayed in the widget
    # A budget per rank: the step's peak of each rank against it.
    tab.get_by_label("budget per rank").fill("1 KB")
    expect(tab.locator(".tx-rfit")).to_contain_text("4 of 4 ranks do not fit")
    tab.get_by_label("budget per rank").fill("1 MB")
    expect(tab.locator(".tx-rfit")).to_contain_text("every rank fits")
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "ranks-rank3.png"))

    # Apply a change to the head (4 -> 6 outputs): the plan no longer matches the model.
    treeitem(ex, "head").click()
    ex.get_by_role("tab", name="Form").click()
    ex.get_by_label("out_features", exact=True).fill("6")
    ex.get_by_role("button", name="Apply").click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"), timeout=60_000)
    ex.get_by_role("tab", name="Ranks").click()
    stale = tab.locator(".tx-rstale")
    expect(stale).to_contain_text("the model changed since this plan was made")
    expect(treeitem(ex, "fc1").locator(".tx-badge-sharded")).to_have_count(0)
    ex.screenshot(path=str(shots / "ranks-stale.png"))
    stale.get_by_role("button", name="Plan again").click()
    expect(stale).to_have_count(0, timeout=120_000)
    # The new plan, rank 3 still selected: fc1's last row, and none of the head's 6 rows (the
    # root's FSDP unit shards them 2, 2, 2, 0); the badges are back.
    expect(fc1.locator(".tx-rshape").first).to_have_text("1×16 uneven")
    head = tab.locator("tbody[data-path='head']")
    expect(head.locator(".tx-rshape").first).to_have_text("0×10 uneven")
    expect(treeitem(ex, "fc1").locator(".tx-badge-sharded")).to_have_text("sharded")
    page.mouse.move(0, 0)
    ex.screenshot(path=str(shots / "ranks-replanned.png"))
    assert errors(page) == []
