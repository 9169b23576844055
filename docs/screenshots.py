"""The documentation's screenshots, taken in a real JupyterLab driven by headless Chromium.

    make screenshots                       # or: python docs/screenshots.py [NAME ...]

Each scene writes a notebook, runs it in a fresh kernel as a person would (Run All), clicks
through the widget and saves PNGs under docs/images/ (the widget alone, or the part of the page
a guide page talks about). Run by hand after a change to the widget, then look at every picture
before committing it; CI does not run this (minutes of a browser and a kernel per scene).

It reuses the browser tests' JupyterLab (tests/ui/lab.py: a throwaway server on 127.0.0.1 with
its own settings, started from this venv) and needs what they need: the built widget
(`make js`) and Debian's chromium (`make chromium`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from lab import (  # noqa: E402 - the browser tests' helpers, found through the path above
    RESNET_SETUP,
    Lab,
    code_cells,
    explorer,
    hide_file_browser,
    open_explorer,
    open_notebook,
    treeitem,
    wait_idle,
)
from mo_server import Marimo  # noqa: E402
from playwright.sync_api import Locator, Page, expect, sync_playwright  # noqa: E402

IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
expect.set_options(timeout=60_000)

Scene = Callable[[Page, Any], None]  # the page, and the server (Lab or Marimo)
SCENES: dict[str, Scene] = {}


def scene(fn: Scene) -> Scene:
    SCENES[fn.__name__] = fn
    return fn


def shot(target: Page | Locator, name: str) -> None:
    """Save `target` (the page, or one element such as the widget) as docs/images/<name>.png."""
    if isinstance(target, Locator):
        target.page.mouse.move(0, 0)  # no hover state or tooltip in the picture
        target.page.wait_for_timeout(300)
        target.screenshot(path=str(IMAGES / f"{name}.png"))
    else:
        target.mouse.move(0, 0)
        target.wait_for_timeout(300)
        target.screenshot(path=str(IMAGES / f"{name}.png"))
    print(f"  docs/images/{name}.png", flush=True)


def tab(ex: Locator, name: str) -> Locator:
    ex.get_by_role("tab", name=name).click()
    return ex.get_by_role("tabpanel", name=name)


@scene
def tour(page: Page, lab: Lab) -> None:
    """JupyterLab on notebooks/01-explore.ipynb run top to bottom, as Binder opens it."""
    open_notebook(page, lab, "01-explore.ipynb", "tour")
    page.get_by_role("menubar").get_by_role("menuitem", name="Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    expect(explorer(page)).to_be_visible(timeout=120_000)
    wait_idle(page)
    explorer(page).scroll_into_view_if_needed()
    shot(page, "binder")


@scene
def resnet(page: Page, lab: Lab) -> None:
    """The demo ResNet: the tree, Overview, Source, Form, Probe, Graph, Memory, an edit that
    breaks the next layer, the History and the Diff tab."""
    ex = open_explorer(page, lab, "resnet", RESNET_SETUP, "ex = tx.explore(model, x)\nex")
    treeitem(ex, "layer1").click()
    treeitem(ex, "0").first.click()
    expect(tab(ex, "Overview")).to_contain_text("BasicBlock")
    shot(ex, "explore")

    source = tab(ex, "Source")
    expect(source).to_contain_text("def forward")
    shot(ex, "source")

    treeitem(ex, "conv1").first.click()
    form = tab(ex, "Form")
    expect(form.get_by_label("out_channels", exact=True)).to_be_visible()
    shot(ex, "form")

    probe = tab(ex, "Probe")
    expect(probe.locator("tbody")).to_contain_text("layer2")
    shot(ex, "probe")

    treeitem(ex, "layer1").click()
    graph = tab(ex, "Graph")
    expect(graph.locator("svg")).to_be_visible()
    expect(graph).to_contain_text("Dataflow inside layer1")
    graph.locator("svg").get_by_role("button", name="select layer1.1").dblclick()
    expect(graph).to_contain_text("Dataflow inside layer1.1")
    shot(ex, "graph")

    memory = tab(ex, "Memory")
    expect(memory.locator(".tx-membar")).to_be_visible()
    memory.get_by_role("switch").check()
    expect(memory).to_contain_text("training step, adamw")
    treeitem(ex, "layer1").click()
    expect(memory.locator("h4").first).to_contain_text("layer1:")
    shot(ex, "memory")

    # conv1 widened to 24 channels: bn1 still expects 16, and the probe names it.
    treeitem(ex, "conv1").first.click()
    form = tab(ex, "Form")
    form.get_by_label("out_channels", exact=True).fill("24")
    ex.get_by_role("button", name="Apply").click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"probe failed at bn1\b"))
    shot(ex, "edit-failed")

    history = tab(ex, "History")
    expect(history).to_contain_text("out_channels")
    shot(ex, "history")

    diff = tab(ex, "Diff")
    expect(diff.locator(".tx-diffsum")).to_be_visible()
    shot(ex, "diff")
    ex.get_by_role("button", name="Undo", exact=True).first.click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))

    # Replace with...: the catalog, searched.
    treeitem(ex, "relu").first.click()
    tab(ex, "Form")
    ex.get_by_role("button", name="Replace with...").click()
    ex.get_by_role("searchbox", name="Search classes").fill("GELU")
    expect(ex.get_by_role("button", name="GELU", exact=True)).to_be_visible()
    shot(ex, "replace")


WRITES = """\
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


@scene
def writes(page: Page, lab: Lab) -> None:
    """A forward that writes to its module: the row's "writes" mark and the Overview's list."""
    ex = open_explorer(page, lab, "writes", WRITES, "ex = tx.explore(model, x)\nex")
    treeitem(ex, "0").click()
    overview = tab(ex, "Overview")
    expect(overview.get_by_role("region", name="Its forward writes")).to_be_visible()
    shot(ex, "writes")


SUMMARY = RESNET_SETUP + "\nprint(tx.summary(model, x, depth=2))"


@scene
def summary(page: Page, lab: Lab) -> None:
    """The text summary printed in a cell."""
    nb = lab.write_notebook("summary.ipynb", SUMMARY)
    open_notebook(page, lab, nb, "summary")
    hide_file_browser(page)
    page.get_by_role("menubar").get_by_role("menuitem", name="Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
    out = code_cells(page).nth(0).locator(".jp-OutputArea-output")
    expect(out).to_contain_text("Total params")
    wait_idle(page)
    shot(code_cells(page).nth(0), "summary")


TRAINING = """\
import torch
from torch import nn
import torchxray as tx

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
with torch.no_grad():
    model[2].bias.fill_(-20.0)  # the second ReLU: dead
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)"""
TRAINING_SHOW = "ex = tx.explore(model, x)\nw = ex.watch(opt, every=2)\nex"
TRAINING_LOOP = """\
for step in range(120):
    opt.zero_grad()
    loss = (model(x) - y).pow(2).mean()
    loss.backward()
    opt.step()
    w.step(loss)
w.flags[:2]"""


@scene
def training(page: Page, lab: Lab) -> None:
    """The Training tab after a short loop with a dead ReLU."""
    ex = open_explorer(page, lab, "training", TRAINING, TRAINING_SHOW, TRAINING_LOOP)
    pane = tab(ex, "Training")
    expect(pane).to_contain_text("dead")
    treeitem(ex, "2").first.click()
    shot(ex, "training")


COMPILE = """\
import torch
import torchxray as tx
from torchxray import demo

model = demo.compile_net()
ids = demo.tokens()"""


@scene
def compile(page: Page, lab: Lab) -> None:  # noqa: A001 - the scene's name is its picture's
    """The Compile tab's two breaks, the tree folded to them."""
    # The real probe: the forward's .item() branch stops a fake one (see Limits).
    ex = open_explorer(
        page, lab, "compile", COMPILE, 'ex = tx.explore(model, ids, mode="real")\nex'
    )
    pane = tab(ex, "Compile")
    pane.get_by_role("button", name="Check", exact=True).click()
    expect(pane.locator(".tx-cverdict")).to_have_text(re.compile(r"graph break"), timeout=120_000)
    shot(ex, "compile")


RANKS = """\
import torch
from torch import nn
from torch.distributed.fsdp import fully_shard
import torchxray as tx
from torchxray import demo

model = demo.llama_like(vocab=250, dim=64, layers=2, heads=4, kv_heads=2, hidden=128, device="cpu")
ids = demo.tokens(vocab=250)


def shard(model, mesh):
    for block in model.layers:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(ids,))"""


@scene
def ranks(page: Page, lab: Lab) -> None:
    """The Ranks tab of an FSDP2 plan over 4 ranks."""
    ex = open_explorer(page, lab, "ranks", RANKS, "ex = tx.explore(model, ids, ranks=plan)\nex")
    pane = tab(ex, "Ranks")
    expect(pane.locator(".tx-rverdict")).to_have_text(re.compile(r"^4 ranks"))
    shot(ex, "ranks")


DETECTOR = """\
import torch, torchvision
import torchxray as tx

model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
    weights=None, weights_backbone=None, num_classes=3
).eval()
images = [torch.rand(3, 160, 160)]"""


@scene
def detector(page: Page, lab: Lab) -> None:
    """A fake probe refused by a value-dependent op, with the real probe offered (Limits)."""
    ex = open_explorer(
        page, lab, "detector", DETECTOR, "ex = tx.explore(model, images)\nex",
        status=r"^probe failed at rpn\b",
    )  # fmt: skip
    pane = tab(ex, "Probe")
    expect(pane.locator(".tx-banner")).to_contain_text("fake tensors cannot run")
    shot(ex, "limits-data-dependent")


@scene
def notebook7(page: Page, lab: Lab) -> None:
    """The explorer in Notebook 7 (run with Lab(app="notebook"), see main)."""
    nb = lab.write_notebook("nb7.ipynb", RESNET_SETUP, "ex = tx.explore(model, x)\nex")
    page.goto(f"{lab.url}/notebooks/{nb}")
    expect(page.locator(".jp-NotebookPanel")).to_be_visible()
    for _ in range(6):  # Notebook 7 drops cells run before its kernel is connected: try again
        page.get_by_role("menubar").get_by_role("menuitem", name="Run", exact=True).click()
        page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()
        try:
            expect(explorer(page)).to_be_visible(timeout=20_000)
            break
        except AssertionError:
            continue
    ex = explorer(page)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    treeitem(ex, "layer1").click()
    ex.scroll_into_view_if_needed()
    shot(page, "notebook7")


@scene
def marimo(page: Page, lab: Lab) -> None:
    """The explorer in marimo, on notebooks/09-marimo.py (run with its own server, see main)."""
    page.goto(lab.url)
    ex = page.locator(".tx-root").first
    expect(ex).to_be_visible(timeout=120_000)
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"), timeout=120_000)
    treeitem(ex, "layer1").click()
    ex.scroll_into_view_if_needed()
    shot(page, "marimo")


def main(names: list[str]) -> None:
    unknown = [n for n in names if n not in SCENES]
    if unknown:
        raise SystemExit(f"no scene {unknown}; the scenes are {', '.join(SCENES)}")
    chosen = names or list(SCENES)
    IMAGES.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="torchxray-shots-"))
    failed: list[str] = []
    # The kernels import a copy of the package from a neutral folder, so that the paths the
    # Source and Compile tabs show are not this checkout's.
    site = work / "site"
    shutil.copytree(
        ROOT / "src" / "torchxray", site / "torchxray", ignore=shutil.ignore_patterns("__pycache__")
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        hosts = {"notebook7": "notebook", "marimo": "marimo"}
        for app in ("lab", "notebook", "marimo"):
            todo = [n for n in chosen if hosts.get(n, "lab") == app]
            if not todo:
                continue
            if app == "marimo":
                os.environ["PYTHONPATH"] = str(site)  # marimo's kernel inherits the server's
                server: Any = Marimo(work / app)
            else:
                server = Lab(work / app, app=app, env={"PYTHONPATH": str(site)})
            with server as lab:
                for name in todo:
                    start = time.monotonic()
                    print(f"{name}: {SCENES[name].__doc__.splitlines()[0]}", flush=True)
                    context = browser.new_context(
                        viewport={"width": 1400, "height": 900}, device_scale_factor=1
                    )
                    page = context.new_page()
                    page.set_default_timeout(90_000)
                    try:
                        SCENES[name](page, lab)
                    except Exception as exc:  # noqa: BLE001 - the other scenes still run
                        failed.append(name)
                        page.screenshot(path=str(work / f"FAILED-{name}.png"))
                        print(f"  FAILED ({work}/FAILED-{name}.png): {exc}", flush=True)
                    finally:
                        context.close()
                        if isinstance(lab, Lab):
                            lab.shutdown_kernels()
                    print(f"  {time.monotonic() - start:.0f} s", flush=True)
        browser.close()
    if failed:
        raise SystemExit(f"scenes that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:])
