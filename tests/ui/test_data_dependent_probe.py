"""A person opens a torchvision detector, whose region proposals have a size only its values decide
(aten.nonzero): the fake probe cannot run it, says which module and why, and offers the real
probe; one click runs it, the tree gets its shapes, and the mode stays real for the next Apply."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

DETECTOR = """\
import torch, torchvision
import torchxray as tx

model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=3
).eval()
images = [torch.rand(3, 160, 160)]"""


def test_a_detector_gets_the_real_probe_offered_and_run(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(
        page, lab, "detector", DETECTOR, "ex = tx.explore(model, images)\nex",
        status=r"^probe failed at rpn\b",
    )  # fmt: skip
    status = ex.get_by_role("status")
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    banner = probe.locator(".tx-banner")
    expect(banner).to_contain_text("fake tensors cannot run aten.nonzero")
    expect(banner).to_contain_text("mode='real'")
    expect(banner).not_to_contain_text("check that the example inputs")  # not the user's fault
    page.screenshot(path=str(shots / "detector-fake-refused.png"))

    banner.get_by_role("button", name="Run real probe").click()
    expect(status).to_have_text(re.compile(r"^probe ok: \d+ modules"), timeout=120_000)
    expect(probe.locator(".tx-buttons .tx-muted").first).to_have_text(re.compile(r"mode real$"))
    expect(probe.get_by_label("mode", exact=True)).to_have_value("real")
    expect(probe.locator(".tx-banner")).to_have_count(0)
    expect(probe.locator("tbody")).to_contain_text("backbone")
    expect(probe.get_by_role("button", name="Run real probe")).to_have_count(0)
    page.screenshot(path=str(shots / "detector-real-probe.png"))


def test_the_header_says_it_in_words_and_runs_the_real_probe(
    page: Page, lab: Lab, shots: Path
) -> None:
    """The header itself, not torch's exception class: what the fake probe cannot run, why, and a
    Run real probe button right there (no tab to open first)."""
    cells = DETECTOR.replace("160, 160", "128, 128"), "ex = tx.explore(model, images)\nex"
    ex = open_explorer(page, lab, "detector-header", *cells, status=r"^probe failed at rpn\b")
    status = ex.get_by_role("status")
    expect(status).to_have_text(
        "probe failed at rpn: a fake probe cannot run aten.nonzero: its output size depends on "
        "the values; run a real probe"
    )
    expect(status).not_to_contain_text("torch._subclasses")
    header = ex.locator(".tx-header")
    real = header.get_by_role("button", name="Run real probe")
    expect(real).to_be_visible()
    page.screenshot(path=str(shots / "detector-header-refused.png"))

    real.click()
    expect(status).to_have_text(re.compile(r"^probe ok: \d+ modules"), timeout=120_000)
    expect(real).to_be_hidden()
    ex.get_by_role("tab", name="Probe").click()
    probe = ex.get_by_role("tabpanel", name="Probe")
    expect(probe.get_by_label("mode", exact=True)).to_have_value("real")
    expect(probe.locator("tbody")).to_contain_text("backbone")
    page.screenshot(path=str(shots / "detector-header-real.png"))
