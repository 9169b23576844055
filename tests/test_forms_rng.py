"""Opening a form leaves the random number generator as it was (issue 58): a constructor
rebuilt on meta may still draw random numbers on the CPU (``torch.FloatTensor(n, m).uniform_``
ignores the device), and that moved the person's generator, so the next dropout mask or
initialisation after opening a form differed from the one without it."""

from __future__ import annotations

import math

import torch
from torch import nn

import torchxray as tx


class GraphConvolution(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.weight.data.uniform_(-1 / math.sqrt(out_features), 1 / math.sqrt(out_features))

    def forward(self, x: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        return adj @ (x @ self.weight)


def test_a_form_draws_nothing_from_the_persons_generator() -> None:
    layer = GraphConvolution(3, 5)
    state = torch.random.get_rng_state()
    f = tx.form(layer)
    assert f.inexact == ""
    assert f.values == {"in_features": 3, "out_features": 5}
    assert torch.equal(torch.random.get_rng_state(), state)
