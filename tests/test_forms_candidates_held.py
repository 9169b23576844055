"""A guessed field whose argument the constructor keeps under another name starts the search at
what that attribute holds (``_forms/candidates/held.py``): a default many times larger than the
model spends the budget on its first build. The zoo's ``tests/handwritten/styles7_r6a.py``.
Under the form's own budget, which is what the start spares."""

from __future__ import annotations

import torch
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles7_r6a import DilatedAudioStack, GraphSearchNet


def test_a_private_count_starts_at_what_it_holds() -> None:
    f = _exact(GraphSearchNet(5, 4, 3, cells=2, nodes=2, width_mult=1))
    assert (f["nodes"].value, f["width_mult"].value, f["cells"].value) == (2, 1, 2)
    f = _exact(DilatedAudioStack(8, 4, blocks=2, taps=2, pool_every=1))
    assert (f["blocks"].value, f["taps"].value, f["pool_every"].value) == (2, 2, 1)


class Rescaled(nn.Module):
    def __init__(self, d, scale=2):
        super().__init__()
        self._scale = scale
        self._scale *= 3  # the attribute no longer holds the argument
        self.fc = nn.Linear(d, d * scale)


def test_an_attribute_changed_after_is_no_value_only_a_start() -> None:
    torch.manual_seed(0)
    f = tx.form(Rescaled(4, scale=1))
    # Started at 3, the rebuild refuses it and the search moves on; never silently 3.
    assert f.inexact == "" and f["scale"].value == 1
