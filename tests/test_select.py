"""tx.select and tx.peft_targets, confirmed by peft's own get_peft_model on real models."""

from __future__ import annotations

import copy
import doctest
import importlib

import pytest
import torch.nn as nn
from fixtures.real import build
from peft import LoraConfig, get_peft_model
from peft.tuners.tuners_utils import BaseTunerLayer

import torchxray as tx
from torchxray.select import explain, peft_matches


def _wrapped(model: nn.Module, target_modules: list[str] | str) -> set[str]:
    """The module paths peft wraps with LoRA for this target_modules value (on a copy)."""
    peft_model = get_peft_model(
        copy.deepcopy(model), LoraConfig(r=2, target_modules=target_modules)
    )
    inner = peft_model.base_model.model
    return {p for p, m in inner.named_modules() if isinstance(m, BaseTunerLayer)}


def test_docstring_example_runs() -> None:
    assert doctest.testmod(importlib.import_module("torchxray.select")).failed == 0


def test_select_by_regex_and_class_on_a_timm_model() -> None:
    model, _, _ = build("timm-vit_tiny")
    order = [p for p, _ in model.named_modules()]
    qkv = tx.select(model, r"attn\.qkv$")
    assert qkv == [p for p in order if p.endswith("attn.qkv")] and len(qkv) == len(model.blocks)
    linears = tx.select(model, cls=nn.Linear)
    assert linears == [p for p, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert tx.select(model, cls="Linear") == linears  # by name
    assert tx.select(model, cls="torch.nn.modules.linear.Linear") == linears  # dotted
    assert tx.select(model, r"^blocks\.0\.", cls=nn.Linear) == [
        p for p in linears if p.startswith("blocks.0.")
    ]


def test_select_matches_classes_along_the_mro_on_a_transformers_model() -> None:
    model, _, _ = build("hf-llama")
    layers = ["model.layers.0", "model.layers.1"]
    assert tx.select(model, cls="GradientCheckpointingLayer") == layers  # a base class, by name
    assert tx.select(model, cls=type(model.model.layers[0])) == layers
    assert tx.select(model, cls="Module")[0] == ""  # every module, the root first


def test_select_bad_input_and_empty_selections() -> None:
    model, _, _ = build("timm-resnet18")
    with pytest.raises(ValueError, match=r"invalid path regex 'layer\[1': .*escape"):
        tx.select(model, "layer[1")
    with pytest.raises(ValueError, match="needs a pattern"):
        tx.select(model)
    with pytest.raises(TypeError, match="cls must be a class or a class name"):
        tx.select(model, cls=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs an nn.Module"):
        tx.select("model", "x")  # type: ignore[arg-type]
    assert tx.select(model, "attention") == [] and tx.select(model, cls="LSTM") == []
    assert explain(model, "attention").startswith("no module matches path regex 'attention'; ")
    assert "BasicBlock" in explain(model, cls="LSTM")
    assert (
        explain(model, r"^layer1\.0\.conv") == "2 modules match path regex '^layer1\\\\.0\\\\.conv'"
    )


@pytest.mark.parametrize(
    "name, wanted",
    [
        # every qkv, one fc1: "qkv" alone is exact, the fc1 needs its block
        ("timm-vit_tiny", lambda m: tx.select(m, r"qkv$") + ["blocks.1.mlp.fc1"]),
        # attn.proj but not patch_embed.proj (a Conv2d also called "proj")
        ("timm-vit_tiny", lambda m: tx.select(m, r"attn\.proj$")),
        ("timm-resnet18", lambda m: ["layer1.0.conv1", "fc"]),
        ("hf-llama", lambda m: tx.select(m, r"v_proj$") + ["model.layers.0.self_attn.q_proj"]),
        ("hf-llama", lambda m: tx.select(m, r"layers\.1\..*_proj$")),
    ],
)
def test_peft_targets_wrap_exactly_the_selection(name: str, wanted) -> None:  # type: ignore[no-untyped-def]
    model, _, _ = build(name)
    paths = wanted(model)
    targets = tx.peft_targets(model, paths)
    assert isinstance(targets, list) and len(targets) <= len(paths)
    assert _wrapped(model, targets) == set(paths)
    keys = [p for p, _ in model.named_modules() if p]
    assert {k for k in keys if peft_matches(targets, k)} == set(paths)


def test_peft_targets_use_the_shortest_unambiguous_suffixes() -> None:
    model, _, _ = build("hf-llama")
    paths = tx.select(model, r"v_proj$") + ["model.layers.0.self_attn.q_proj"]
    assert tx.peft_targets(model, paths) == ["0.self_attn.q_proj", "v_proj"]
    vit, _, _ = build("timm-vit_tiny")
    assert tx.peft_targets(vit, tx.select(vit, r"attn\.proj$")) == ["attn.proj"]


def test_peft_targets_fall_back_to_a_regex_when_no_list_can_say_it() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)  # wanted: but "fc" also ends "head.fc"
            self.head = nn.Sequential()
            self.head.add_module("fc", nn.Linear(4, 4))
            self.out = nn.Linear(4, 2)

    model = Net()
    targets = tx.peft_targets(model, ["fc", "out"])
    assert isinstance(targets, str)
    assert _wrapped(model, targets) == {"fc", "out"}
    assert tx.peft_targets(model, ["head.fc"]) == ["head.fc"]


def test_peft_targets_bad_input() -> None:
    model, _, _ = build("timm-resnet18")
    with pytest.raises(ValueError, match="got no paths: the selection matched nothing"):
        tx.peft_targets(model, tx.select(model, "attention"))
    with pytest.raises(
        KeyError,
        match="no submodule at path 'layer1.0.conv'; closest existing paths: 'layer1.0.conv2'",
    ):
        tx.peft_targets(model, ["layer1.0.conv"])
    with pytest.raises(ValueError, match="'' is the model itself"):
        tx.peft_targets(model, [""])
    assert tx.peft_targets(model, "fc") == ["fc"]  # one path as a plain string
    model.head_alias = model.fc  # the same module at a second path
    with pytest.raises(
        ValueError, match="'head_alias' is another path of the module peft names 'fc'"
    ):
        tx.peft_targets(model, ["head_alias"])
