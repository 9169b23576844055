"""Uninitialised tensors (``is_lazy``) outside lazy module classes: a plain module holding an
``nn.UninitializedParameter`` is refused by name, as a lazy module is, never a torch error."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchxray as tx


class Holder(nn.Module):
    """torchinfo's UninitializedParameterModel, nested: the tensor sits on a plain module."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.block = nn.Module()
        self.block.w = nn.UninitializedParameter()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class SelfInit(nn.Module):
    """A custom module that materialises its own parameter in its forward (torchinfo's fixture)."""

    def __init__(self) -> None:
        super().__init__()
        self.param: nn.Parameter = nn.UninitializedParameter()
        self.register_buffer("stat", nn.UninitializedBuffer())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.param = nn.Parameter(torch.zeros(128))
        return x


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_probe_names_the_uninitialised_tensor(mode: str) -> None:
    model = Holder()
    rep = tx.probe(model, torch.randn(2, 4), mode=mode)
    assert not rep.ok and rep.error is not None
    assert rep.error.path == "block"
    assert "block.w" in rep.error.message and "uninitialised" in rep.error.message
    assert "materialize" in rep.error.hint and "initialise" in rep.error.hint
    assert type(model.block.w) is nn.UninitializedParameter  # the model is untouched


def test_probe_refuses_a_forward_that_would_initialise_and_lists_every_tensor() -> None:
    model = SelfInit()
    rep = tx.probe(model, torch.randn(2, 128))
    assert not rep.ok and rep.error is not None and rep.error.path == ""
    assert "param, stat are uninitialised" in rep.error.message
    assert "UninitializedBuffer" in rep.error.message
    assert type(model.param) is nn.UninitializedParameter


def test_summary_shows_the_refusal_and_a_note() -> None:
    text = tx.summary(Holder(), torch.randn(2, 4))
    assert "probe failed at block" in text and "block.w" in text
    assert "Uninitialised parameters" in text and "counted as 0" in text
    assert "Total params: 20" in text


def test_memory_reports_why_it_ran_no_step() -> None:
    rep = tx.memory(Holder(), torch.randn(2, 4), training=True, optimizer="adamw")
    assert rep.error is not None and "block.w" in rep.error and "materialize" in rep.error
    assert rep.params == 20 * 4 and rep["block"].params == 0 and rep["lin"].params == 80
    assert rep.peak == rep.activations == rep.grads == 0
    assert rep.summary().startswith("not measured: block.w")


def test_memory_of_a_lazy_module_says_run_it_once() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = nn.Sequential(nn.Linear(3, 5), nn.LazyLinear(2))
    rep = tx.memory(model, torch.randn(2, 3))
    assert rep.error is not None and "1.weight, 1.bias" in rep.error
    assert "Run the model once" in rep.error
    assert type(model[1]) is nn.LazyLinear
