"""Tensor subclasses that store their data in other tensors (torchao's quantized weights): diff
and stats read them through their dequantized values, never raising on an unchanged copy."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._tensors import inner_tensors, is_wrapper, logical_bytes, plain_values, stored_bytes

q = pytest.importorskip("torchao.quantization")


def _quantized() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q.quantize_(model, q.Int8WeightOnlyConfig())
    return model


def test_a_quantized_weight_stores_less_than_it_stands_for() -> None:
    w = _quantized()[0].weight
    assert is_wrapper(w) and not is_wrapper(torch.ones(2))
    assert logical_bytes(w) == 32 * 64 * 4
    # int8 values plus one float32 scale per row (and whatever else torchao keeps per row)
    assert stored_bytes(w) == sum(t.numel() * t.element_size() for t in inner_tensors(w))
    assert 32 * 64 <= stored_bytes(w) < logical_bytes(w) / 2
    values = plain_values(w)
    assert values is not None and type(values) is torch.Tensor and values.shape == w.shape


def test_diff_of_an_unchanged_copy_and_of_its_own_state_dict_finds_nothing() -> None:
    model = _quantized()
    for other in (copy.deepcopy(model), model.state_dict()):
        d = tx.diff(model, other)
        assert {c.kind for c in d.params.values()} == {"same"}, d.params


def test_diff_names_the_one_quantized_weight_that_changed() -> None:
    model = _quantized()
    twin = copy.deepcopy(model)
    twin[0].weight.qdata[0, 0] += 1
    d = tx.diff(model, twin)
    changed = {n: c.kind for n, c in d.params.items() if c.kind != "same"}
    assert changed == {"0.weight": "values"}
    assert d.params["0.weight"].rel_change is not None and d.params["0.weight"].rel_change > 0


def test_stats_of_a_quantized_weight_are_those_of_its_values() -> None:
    model = _quantized()
    s = tx.stats(model[0])["weight"]
    want = model[0].weight.dequantize()
    assert s.skipped is None
    assert s.norm == pytest.approx(float(want.double().norm()))
    assert s.min == pytest.approx(float(want.min()))


def test_the_tree_and_memory_report_what_a_quantized_model_stores() -> None:
    model = _quantized()
    stored = sum(stored_bytes(t) for t in model.state_dict().values())
    logical = sum(logical_bytes(t) for t in model.state_dict().values())
    node = tx.walk(model)[""]
    assert (node.bytes_total, node.bytes_local) == (logical, stored)
    assert "Int8Tensor" in node.placement
    assert node.params_total == sum(p.numel() for p in model.parameters())  # logical counts
    rep = tx.memory(model, torch.randn(2, 64), training=True, optimizer="adamw")
    assert rep.params == stored
    trainable = sum(p.numel() * 4 for p in model.parameters() if p.requires_grad)
    assert (rep.grads, rep.optimizer) == (trainable, 2 * trainable)
