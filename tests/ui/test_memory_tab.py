"""The Memory tab and the tree's colouring, as a person uses them on real models built from small
configs in the notebook (a timm ResNet, a transformers Llama): open the tab, switch to a training
step, read the stacked bar and "fits on", type a device size, colour the tree by a figure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer, set_theme, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

TIMM = """\
import timm, torch
import torchxray as tx

model = timm.create_model("resnet18", pretrained=False, num_classes=10).eval()
x = torch.randn(2, 3, 64, 64)"""

LLAMA = """\
import torch, transformers
import torchxray as tx

config = transformers.LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
)
model = transformers.LlamaForCausalLM(config).eval()
ids = torch.randint(0, 128, (2, 8))"""


def _memory_tab(ex: Locator) -> Locator:
    ex.get_by_role("tab", name="Memory").click()
    pane = ex.get_by_role("tabpanel", name="Memory")
    expect(pane.locator(".tx-membar")).to_be_visible()
    return pane


def _bytes(text: str) -> float:
    m = re.search(r"([\d.]+) (B|KiB|MiB|GiB)", text)
    assert m, text
    return float(m.group(1)) * 1024 ** ["B", "KiB", "MiB", "GiB"].index(m.group(2))


def test_memory_tab_on_a_timm_resnet(page: Page, lab: Lab, shots: Path) -> None:
    ex = open_explorer(page, lab, "memory-timm", TIMM, "ex = tx.explore(model, x)\nex")
    pane = _memory_tab(ex)
    # Inference: weights only, and the note says why.
    expect(pane.locator(".tx-memseg")).to_have_count(1)
    expect(pane).to_contain_text("inference (forward)")
    expect(pane).to_contain_text("float32")
    expect(pane.get_by_label("optimizer", exact=True)).to_be_disabled()
    # A training step with AdamW: weights, gradients, optimizer state (twice the weights) and
    # the activations autograd saves, one coloured part each.
    pane.get_by_role("switch").check()
    expect(pane).to_contain_text("training step, adamw")
    expect(pane.locator(".tx-memseg")).to_have_count(4)
    legend = pane.locator(".tx-memlegend li")
    weights, grads, optim = (_bytes(legend.nth(i).inner_text()) for i in range(3))
    assert grads == weights and abs(optim - 2 * weights) <= 0.1 * weights
    fits = pane.get_by_role("list", name="fits on").get_by_role("listitem")
    expect(fits.first).to_contain_text(re.compile(r"^CPU RAM [\d.]+ GiB: (fits|does not fit)"))
    size = pane.get_by_label("device size")
    size.fill("16 GB")
    expect(pane.locator(".tx-mem-size")).to_have_text(re.compile(r"^14\.9 GiB: fits \(\d+% used\)"))
    size.fill("1 MB")
    expect(pane.locator(".tx-mem-size")).to_have_text(re.compile(r"does not fit \(needs [\d.]+×\)"))
    size.fill("lots of memory")
    expect(pane.locator(".tx-mem-size")).to_contain_text("type e.g. 24 GB")
    # SGD: one momentum tensor per parameter.
    pane.get_by_label("optimizer", exact=True).select_option("sgd")
    expect(pane).to_contain_text("training step, sgd")
    expect(legend.nth(2)).to_have_text(legend.nth(0).inner_text().replace("weights", "optimizer"))
    # The bar follows the selection: one residual stage.
    treeitem(ex, "layer1").click()
    expect(pane.locator("h4").first).to_contain_text("layer1:")
    page.screenshot(path=str(shots / "memory-timm-training.png"))

    # The tree coloured by parameters, with a legend; the big stages are the red ones.
    ex.get_by_label("colour the tree by").select_option("params")
    expect(ex.get_by_label("colour legend")).to_contain_text("share of the model's parameters")
    swatch = treeitem(ex, "layer4").locator(".tx-heat")
    expect(swatch).to_have_attribute(
        "title", re.compile(r"^parameters: [\d.]+M \(\d+% of the model\)")
    )
    expect(treeitem(ex, "conv1").locator(".tx-heat")).to_have_attribute(
        "title", re.compile(r"\((0\.\d+|\d)% of the model\)")
    )
    page.screenshot(path=str(shots / "memory-timm-colour-params.png"))


def test_memory_tab_on_a_transformers_llama_in_the_dark_theme(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(
        page, lab, "memory-llama", LLAMA, "ex = tx.explore(model, input_ids=ids)\nex"
    )
    set_theme(page, "JupyterLab Dark")
    try:
        pane = _memory_tab(ex)
        pane.get_by_role("switch").check()
        expect(pane.locator(".tx-memseg")).to_have_count(4)
        expect(pane).to_contain_text("model peak")
        expect(pane.get_by_role("list", name="fits on")).to_contain_text("CPU RAM")
        pane.get_by_label("device size").fill("24 GB")
        expect(pane.locator(".tx-mem-size")).to_contain_text("fits")
        # Activations colour the tree: the decoder layers saved most, the norm little.
        ex.get_by_label("colour the tree by").select_option("activations")
        legend = ex.get_by_label("colour legend")
        expect(legend).to_contain_text("share of the model's activations (training)")
        expect(treeitem(ex, "model").locator(".tx-heat")).to_have_attribute(
            "title", re.compile(r"^activations \(training\): [\d.]+ (KiB|MiB)")
        )
        # FLOPs of the fake probe; time is not measured by it, and the legend says so.
        ex.get_by_label("colour the tree by").select_option("flops")
        expect(treeitem(ex, "lm_head").locator(".tx-heat")).to_have_attribute(
            "title", re.compile(r"^FLOPs: [\d.]+[kM]? \(\d+% of the model\)")
        )
        ex.get_by_label("colour the tree by").select_option("time")
        expect(legend).to_contain_text("fake probes measure no time")
        ex.get_by_label("colour the tree by").select_option("params")
        expect(treeitem(ex, "lm_head").locator(".tx-heat")).to_be_visible()
        page.screenshot(path=str(shots / "memory-llama-dark.png"))
        bg = pane.evaluate("el => getComputedStyle(el.closest('.tx-root')).backgroundColor")
        assert bg != "rgb(255, 255, 255)", bg
    finally:
        set_theme(page, "JupyterLab Light")


OFFLOADED = """\
import tempfile, accelerate
from torch import nn

encoder = nn.Sequential(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)).eval()
device_map = {"model.embed_tokens": "cpu", "model.layers.0": "cpu", "model.layers.1.self_attn": "disk",
              "model.layers.1.mlp": "cpu", "model.layers.1.input_layernorm": "cpu",
              "model.layers.1.post_attention_layernorm": "cpu", "model.norm": "cpu",
              "model.rotary_emb": "cpu", "lm_head": "cpu"}
accelerate.dispatch_model(model, device_map=device_map, offload_dir=tempfile.mkdtemp())"""


def test_placement_and_not_called_on_rows_and_in_the_overview(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(
        page,
        lab,
        "placement",
        LLAMA,
        OFFLOADED,
        "ex = tx.explore(model, input_ids=ids)\nex",
        "tx.explore(encoder, torch.randn(2, 5, 16))",
        cell=2,
    )
    # The offloaded attention: a badge on its row, and its placement and size in the Overview.
    treeitem(ex, "model").get_by_text("▸").click()
    treeitem(ex, "layers").get_by_text("▸").click()
    treeitem(ex, "1").get_by_text("▸").click()
    attn = treeitem(ex, "self_attn").last
    expect(attn.locator(".tx-mark-place")).to_have_text("offloaded: disk")
    expect(treeitem(ex, "mlp").last.locator(".tx-mark-place")).to_have_count(0)
    attn.click()
    overview = ex.get_by_role("tabpanel", name="Overview")
    expect(overview).to_contain_text("model.layers.1.self_attn")
    expect(overview).to_contain_text(re.compile(r"placement\s*offloaded: disk \(runs on cpu\)"))
    page.screenshot(path=str(shots / "placement-offloaded.png"))
    # The encoder layer's fused fast path: its children say "not called", and why.
    enc = page.locator(".tx-root").last
    expect(enc.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    treeitem(enc, "0").get_by_text("▸").click()
    row = treeitem(enc, "self_attn")
    expect(row.locator(".tx-notcalled")).to_have_text("not called")
    expect(row.locator(".tx-notcalled")).to_have_attribute("title", re.compile("fast path"))
    row.click()
    expect(enc.get_by_role("tabpanel", name="Overview")).to_contain_text(
        re.compile(r"not called: .*fast path")
    )
    enc.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "not-called.png"))
