"""A person selects a block (blocks.1.1) and opens the Memory tab to ask "how much memory is this
block": one answer comes first and large (the block's own tensors), and the model's figures below
it are labelled as the model's (what it held while the block ran, its peak), not set beside the
answer as equals; inference lists no "activations 0 B"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import STAGED_NET as MODEL
from lab import Lab, open_explorer
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui


def test_the_memory_of_a_block_is_one_answer_first(page: Page, lab: Lab, shots: Path) -> None:
    show = "ex = tx.explore(model, torch.randn(4, 3, 64, 64))\nex"
    ex = open_explorer(page, lab, "memory-answer", MODEL, show)
    ex.get_by_role("treeitem", name=re.compile(r"^blocks ")).locator(".tx-caret").click()
    ex.get_by_role("treeitem", name=re.compile(r"^1 Sequential")).locator(".tx-caret").click()
    ex.get_by_role("treeitem", name=re.compile(r"^1 Block")).click()
    ex.get_by_role("tab", name="Memory").click()
    pane = ex.get_by_role("tabpanel", name="Memory")
    answer = pane.locator(".tx-mem-answer")
    # Block(16): a 3x3 conv, 16*16*9 + 16 float32 weights = 9,280 B = 9.1 KiB.
    expect(answer.locator(".tx-mem-big")).to_have_text("9.1 KiB")
    expect(answer).to_contain_text("held by blocks.1.1 in a forward: its weights and buffers")
    big = answer.locator(".tx-mem-big").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    body = pane.locator(".tx-mem-context dd").first.evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)"
    )
    assert big >= 1.5 * body, (big, body)
    expect(pane.locator(".tx-memlegend")).to_have_text("weights 9.1 KiB")
    terms = pane.locator(".tx-mem-context dt")
    expect(terms).to_have_text(
        ["weights' dtype", "measured on", "the model while it ran", "model peak"]
    )
    expect(pane.locator(".tx-mem-context")).to_contain_text("not blocks.1.1's alone")
    page.screenshot(path=str(shots / "memory-block-inference.png"))

    pane.get_by_role("switch").check()
    expect(answer).to_contain_text(
        "held by blocks.1.1 in a training step (adamw): weights, gradients, optimizer state and "
        "saved activations, each at its largest"
    )
    expect(pane.locator(".tx-memlegend li")).to_have_count(4)
    page.screenshot(path=str(shots / "memory-block-training.png"))

    ex.get_by_role("treeitem", name=re.compile(r"^\(model\) ")).click()
    expect(answer).to_contain_text("model peak in a training step (adamw): what a device needs")
