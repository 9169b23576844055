"""A forward that replaces a weight's ``.data`` (PixelCNN's masked convolution:
``self.weight.data *= self.mask``) leaves the weight as it was after a fake or a real probe: the
fake probe had left it on meta, so the next real forward failed with "two devices, meta and
cpu" (issue 58). The shadowing property of ``torch.Tensor.data`` lives only while a run does."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchxray as tx


class Masked(nn.Conv2d):
    def __init__(self, *args: object, style: str = "imul", **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.style = style
        g = torch.Generator().manual_seed(0)
        self.register_buffer("mask", (torch.rand(self.weight.shape, generator=g) > 0.5).float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.style == "imul":
            self.weight.data *= self.mask
        elif self.style == "data":
            self.weight.data = self.weight.data * self.mask
        else:
            self.weight.data = self.weight * self.mask
        return super().forward(x)


@pytest.mark.parametrize("mode", ["fake", "real"])
@pytest.mark.parametrize("style", ["imul", "data", "plain"])
def test_a_weight_whose_data_the_forward_replaces_is_put_back(style: str, mode: str) -> None:
    model = nn.Sequential(Masked(1, 2, 3, padding=1, style=style), nn.ReLU())
    weight = model[0].weight
    values = weight.detach().clone()
    rep = tx.probe(model, torch.randn(1, 1, 6, 6), mode=mode)
    assert rep.ok, rep.error
    assert rep[""].output_shapes == ((1, 2, 6, 6),)
    assert model[0].weight is weight and weight.device.type == "cpu"
    assert torch.equal(weight.detach(), values)
    assert any(w.attribute == "weight" and ".data replaced" in w.detail for w in rep.writes)
    assert "data" not in torch.Tensor.__dict__  # torch's own descriptor again
    with torch.no_grad():
        model(torch.randn(1, 1, 6, 6))  # a real forward after it runs


def test_the_property_goes_with_the_run_when_the_forward_raises() -> None:
    class Breaks(Masked):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.weight.data = self.weight.data * 0
            raise ValueError("boom")

    model = Breaks(1, 1, 3)
    values = model.weight.detach().clone()
    rep = tx.probe(model, torch.randn(1, 1, 4, 4), mode="fake")
    assert not rep.ok and "boom" in rep.error.message
    assert "data" not in torch.Tensor.__dict__
    assert model.weight.device.type == "cpu" and torch.equal(model.weight.detach(), values)
