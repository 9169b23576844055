"""A person attaches JupyterLab to a 2-rank training job that runs elsewhere (a subprocess here):
the Training tab follows the job live (the view polls it), the tree coloured by the gradient norm
with a sparkline per row, the first NaN named with its rank and step and marked on its row, the
rank selector's worst-rank view and one rank, and "job ended at step N" with the last figures
kept once the job ends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, code_cells, explorer, hide_file_browser, open_notebook, run_cell, treeitem
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.ui

JOB = Path(__file__).resolve().parents[1] / "fixtures" / "attach_job.py"

START = f"""\
import subprocess, sys, tempfile
from pathlib import Path
import torchxray as tx

hold = Path(tempfile.mkdtemp()) / "hold"
proc = subprocess.Popen(
    [sys.executable, {str(JOB)!r}, "--world", "2", "--steps", "60", "--every", "5", "--publish",
     "--nan", "1:30:1", "--check-every-step", "--step-sleep", "0.15", "--hold", str(hold), "--hold-max", "600"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
port = int(proc.stdout.readline().split()[1])
job = tx.attach(f"127.0.0.1:{{port}}", timeout=120)"""

SHOW = "ex = tx.explore(job)\nex"

END = "hold.touch(); proc.wait(60)"


def test_the_training_tab_follows_a_job_attached_to(page: Page, lab: Lab, shots: Path) -> None:
    nb = lab.write_notebook("attach-tab.ipynb", START, SHOW, END)
    open_notebook(page, lab, nb, "attach-tab")
    hide_file_browser(page)
    run_cell(page, 0, timeout=180_000)
    run_cell(page, 1, timeout=120_000)
    ex = explorer(page, 1)
    expect(ex.get_by_role("status")).to_contain_text("published its tree")
    ex.get_by_role("tab", name="Training").click()
    pane = ex.get_by_role("tabpanel", name="Training")
    status = pane.locator(".tx-train-status")
    expect(status).to_contain_text("attached to 127.0.0.1:")
    expect(status).to_contain_text("2/2 ranks")
    first = int(re.search(r"step (\d+)", status.inner_text()).group(1))  # type: ignore[union-attr]
    expect(status).not_to_have_text(re.compile(rf"· step {first} ·"), timeout=30_000)  # live

    # The tree, coloured by the gradient norm: a swatch and a sparkline per row.
    treeitem(ex, "blocks").locator(".tx-caret").click()
    ex.get_by_label("colour the tree by").select_option("grad_norm")
    row = treeitem(ex, "embed")
    expect(row.locator(".tx-heat")).to_have_attribute(
        "title", re.compile(r"gradient norm .*on rank \d")
    )
    expect(row.locator(".tx-spark polyline")).to_have_count(1, timeout=30_000)

    # Rank 1 meets the planted NaN at step 30 in blocks.1: named with its rank, marked on its row.
    banner = pane.locator(".tx-train-nan")
    expect(banner).to_contain_text("First NaN/Inf: rank 1, step 30, blocks.1", timeout=90_000)
    rank = pane.get_by_label("rank shown")
    expect(rank.locator("option").first).to_have_text("worst rank (rank 1)")
    banner.get_by_role("button", name="Select it").click()  # unfolds the four blocks to it
    expect(treeitem(ex, "1")).to_have_attribute("aria-selected", "true")
    expect(treeitem(ex, "1").locator(".tx-badge-first-nan")).to_have_text("first NaN")
    expect(pane.locator(".tx-train-module h4").first).to_contain_text("blocks.1 · Block · rank 1")
    expect(pane.locator(".tx-train-ranks tr")).to_have_count(3)  # a header, one row per rank
    page.screenshot(path=str(shots / "attach-tab-worst.png"))

    rank.select_option("0")
    expect(pane.locator(".tx-train-module h4").first).to_contain_text("rank 0", timeout=30_000)

    # The job ends: said so, and the last figures stay.
    code_cells(page).nth(2).locator(".jp-InputArea-editor").click()
    page.keyboard.press("Control+Enter")
    expect(status).to_contain_text("job ended at step 60", timeout=90_000)
    expect(banner).to_contain_text("rank 1, step 30")
    expect(pane.locator(".tx-train-series polyline").first).to_be_visible()
    status.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "attach-tab-ended.png"))
