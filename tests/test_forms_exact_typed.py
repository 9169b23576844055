"""The gate compares tensor types (issue 40): a torchao-quantized block's constructor makes plain
float tensors, so its form is not exact, and says which tensor and why; an edit through the log
still applies (it carries each quantized tensor over where its shape fits, and its own gate
compares types). Real torchao (``quantize_`` with ``Int8WeightOnlyConfig``) on timm's ``Mlp``."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchxray as tx

q = pytest.importorskip("torchao.quantization")
layers = pytest.importorskip("timm.layers")


def _quantized() -> nn.Sequential:
    torch.manual_seed(0)
    model = nn.Sequential(layers.Mlp(64, 128, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q.quantize_(model, q.Int8WeightOnlyConfig())
    return model


def test_a_quantized_block_is_not_an_exact_rebuild() -> None:
    model = _quantized()
    kind = type(model[0].fc1.weight)
    f = tx.form(model[0])
    assert f.inexact == (
        f"inexact: fc1.weight is a torchao {kind.__name__} (and 1 more: fc2.weight); a rebuild "
        "makes a plain tensor. An edit carries each such tensor over where its shape still fits"
    )
    # The values are right: the search proved them on the logical parts.
    assert (f["in_features"].value, f["hidden_features"].value) == (64, 128)
    assert type(f.build().fc1.weight) is nn.Parameter
    assert tx.form(model[0].fc1).inexact.startswith("inexact: weight is a torchao ")


def test_a_container_of_the_live_blocks_is_exact() -> None:
    # nn.Sequential's form holds the live layers: its rebuild has their quantized tensors.
    assert tx.form(_quantized()).inexact == ""


def test_an_edit_keeps_the_quantized_tensors_it_does_not_reach() -> None:
    model = _quantized()
    kind = type(model[0].fc1.weight)
    entry = tx.PatchLog(model).edit("0", drop=0.1)
    assert type(model[0].fc1.weight) is type(model[0].fc2.weight) is kind
    assert "fc1.weight" in entry.kept and model(torch.randn(2, 64)).shape == (2, 32)


def test_a_plain_block_is_still_exact() -> None:
    assert tx.form(layers.Mlp(64, 128, 32)).inexact == ""
