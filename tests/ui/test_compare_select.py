"""Selection, bulk edits, Diff and weight health as a person uses them, on real models
built from small configs in the notebook: a timm ViT (select all 4 GELUs from the filter, replace
them in one undoable patch, see the Diff tab and its badges, freeze two blocks, find a planted NaN)
and a transformers Llama (PEFT targets with the LoRA count, a checkpoint diff and its errors, the
first non-finite module of a real probe)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lab import Lab, open_explorer, treeitem
from playwright.sync_api import Locator, Page, expect

pytestmark = pytest.mark.ui

VIT = """\
import timm, torch
import torchxray as tx

model = timm.create_model(
    "vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, embed_dim=32, depth=4,
    num_heads=2, num_classes=10,
).eval()
with torch.no_grad():
    model.head.weight[0, 0] = float("nan")  # a bad weight to find
x = torch.randn(2, 3, 32, 32)"""

LLAMA = """\
import torch, transformers
import torchxray as tx
from safetensors.torch import save_file

config = transformers.LlamaConfig(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
)
model = transformers.LlamaForCausalLM(config).eval()
ids = torch.randint(0, 128, (2, 8))
sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
sd["model.norm.weight"] = sd["model.norm.weight"] + 1
save_file(sd, "llama-changed.safetensors")
with torch.no_grad():
    model.model.layers[1].mlp.down_proj.weight.fill_(float("inf"))"""


def _filter(ex: Locator, query: str, regex: bool = False) -> None:
    ex.get_by_label("regex").set_checked(regex)
    ex.get_by_label("Filter modules").fill(query)


def _select_all(ex: Locator, n: int) -> None:
    button = ex.get_by_role("button", name=f"select all {n} matches")
    expect(button).to_be_visible()
    button.click()
    expect(ex.locator(".tx-bulk .tx-count")).to_have_text(f"{n} selected")


def test_select_replace_diff_freeze_and_nan_on_a_timm_vit(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(page, lab, "compare-vit", VIT, "ex = tx.explore(model, x)\nex")
    # The planted NaN: a badge on the head's row, and its count in the Overview's weights table.
    head = treeitem(ex, "head")
    expect(head.locator(".tx-badge-nan")).to_have_text("NaN/Inf")
    head.click()
    overview = ex.get_by_role("tabpanel", name="Overview")
    stats = overview.locator(".tx-stattable")
    expect(stats).to_be_visible()
    expect(stats.locator("tr.tx-nonfinite-row")).to_have_count(1)
    expect(stats.locator("svg.tx-spark").first).to_be_visible()
    page.screenshot(path=str(shots / "compare-vit-stats.png"))

    # Every GELU through the filter, replaced by SiLU after a live count: one History entry.
    _filter(ex, "GELU")
    _select_all(ex, 4)
    ex.get_by_role("button", name="Replace…").click()
    ex.get_by_label("Replace with class").fill("torch.nn.SiLU")
    expect(ex.locator(".tx-plan")).to_have_text("replace 4 modules (GELU×4) with SiLU")
    page.screenshot(path=str(shots / "compare-vit-replace-plan.png"))
    ex.get_by_role("button", name="Replace all 4").click()
    expect(ex.get_by_role("status")).to_have_text(re.compile(r"^probe ok"))
    # No GELU is left: the filter finds none, and nothing offers to select the ones replaced.
    expect(ex.locator(".tx-filterbar .tx-count")).to_have_text("0 matches")
    expect(ex.get_by_role("button", name=re.compile(r"^select all"))).to_be_hidden()
    page.screenshot(path=str(shots / "compare-vit-replaced.png"))
    ex.get_by_role("tab", name="History").click()
    log = ex.get_by_role("tabpanel", name="History").locator(".tx-log li")
    expect(log).to_have_count(1)
    expect(log.first).to_contain_text("replace_all")
    expect(log.first).to_contain_text("GELU → SiLU")

    # The Diff tab against the model as opened: four retyped modules, badged in the tree.
    ex.get_by_role("tab", name="Diff").click()
    diff = ex.get_by_role("tabpanel", name="Diff")
    expect(diff.locator(".tx-diffsum")).to_contain_text("4 retyped")
    expect(diff.locator("tbody tr")).to_have_count(4)
    _filter(ex, "mlp.act")
    expect(treeitem(ex, "act").first.locator(".tx-badge-retyped")).to_be_visible()
    page.screenshot(path=str(shots / "compare-vit-diff.png"))
    ex.get_by_role("button", name="Undo", exact=True).click()
    expect(diff.locator(".tx-diffsum")).to_have_text(re.compile("^No difference"))

    # Two blocks frozen from the selection: one History entry, trainable count down.
    _filter(ex, r"^blocks\.[01]$", regex=True)
    _select_all(ex, 2)
    ex.get_by_role("button", name="Freeze", exact=True).click()
    ex.get_by_role("tab", name="History").click()
    expect(log).to_have_count(1)
    expect(log.first).to_contain_text("freeze blocks.0, blocks.1")
    # Frozen rows say so, and the Diff against the model as opened lists what was frozen.
    expect(treeitem(ex, "0").first.locator(".tx-mark-frozen")).to_have_text("frozen")
    ex.get_by_role("tab", name="Diff").click()
    diff.get_by_role("button", name="Compare").click()
    expect(diff.locator(".tx-diffsum")).to_contain_text(re.compile(r"\d+ frozen"))
    expect(diff.locator(".tx-diffsum")).not_to_contain_text("retyped")
    page.screenshot(path=str(shots / "compare-vit-freeze.png"))


def test_peft_checkpoint_diff_and_nonfinite_probe_on_a_llama(
    page: Page, lab: Lab, shots: Path
) -> None:
    ex = open_explorer(
        page, lab, "compare-llama", LLAMA, "ex = tx.explore(model, input_ids=ids, mode='real')\nex"
    )
    # The real probe met Inf first in layer 1's down_proj: named in the header, badged in the tree.
    note = ex.locator(".tx-nonfinite")
    expect(note).to_have_text(
        re.compile(r"first in the outputs of model\.layers\.1\.mlp\.down_proj")
    )
    _filter(ex, "layers.1.mlp.down_proj")
    expect(treeitem(ex, "down_proj").locator(".tx-badge-nonfinite")).to_be_visible()

    # PEFT: q_proj and v_proj of both layers; LoRA at r=8 adds 8*(64+64) + 8*(64+32) per layer.
    _filter(ex, r"[qv]_proj$", regex=True)
    _select_all(ex, 4)
    ex.get_by_role("button", name="PEFT…").click()
    expect(ex.locator(".tx-peft")).to_have_text("target_modules=['q_proj', 'v_proj']")
    expect(ex.locator(".tx-bulktools .tx-plan")).to_contain_text("adds 3.6k parameters (3,584)")
    ex.get_by_label("LoRA rank r").fill("4")
    expect(ex.locator(".tx-bulktools .tx-plan")).to_contain_text("(1,792)")
    page.screenshot(path=str(shots / "compare-llama-peft.png"))

    # A checkpoint: one tensor changed; a missing file said in words.
    ex.get_by_role("tab", name="Diff").click()
    diff = ex.get_by_role("tabpanel", name="Diff")
    diff.get_by_label("Compare with").select_option("checkpoint")
    diff.get_by_label("Checkpoint path").fill("nope.safetensors")
    diff.get_by_role("button", name="Compare").click()
    expect(diff.get_by_role("alert")).to_contain_text("no checkpoint file")
    diff.get_by_label("Checkpoint path").fill("llama-changed.safetensors")
    diff.get_by_role("button", name="Compare").click()
    rows = diff.locator("tbody tr")
    expect(rows.filter(has_text="model.norm.weight")).to_contain_text("values")
    expect(rows.filter(has_text="down_proj.weight")).to_have_count(1)  # the Inf came after saving
    page.screenshot(path=str(shots / "compare-llama-diff.png"))
