"""Sizes read back off the shapes of the tensors a module keeps (``_forms/sources/shapes.py``),
and a number kept only through a step with a constant, or compared with whole numbers
(``_forms/sources/inverted.py``): the zoo's ``tests/handwritten/styles7_r6b.py``."""

from __future__ import annotations

import pytest
import torch
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6b import AnchorCenters, CoordinateEncoder, PrototypeHead, RankPool
from torchxray._forms.sources.inverted import compared_ints, inverted
from torchxray._forms.sources.shapes import shapes

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_ends_of_a_kept_tensors_shape_come_past_batch_and_channels_first() -> None:
    m = nn.Module()
    m.register_buffer("grid", torch.zeros(1, 3, 4, 5, 6))
    assert shapes(m)[:2] == [[4, 5, 6], [3, 4, 5, 6]]
    m = nn.Module()
    m.register_buffer("coords", torch.zeros(5, 7, 2))  # channels last
    assert [5, 7] in shapes(m)


def test_sizes_a_buffer_was_made_in_are_read_back() -> None:
    assert _exact(AnchorCenters([4, 6], stride=8))["feature_size"].value == [4, 6]
    assert _exact(CoordinateEncoder((5, 7), 6))["grid"].value == [5, 7]


def test_a_number_kept_through_one_step_is_undone() -> None:
    m = PrototypeHead(12, 5, 0.25)
    assert inverted(PrototypeHead, m, "tau") == [0.25]
    assert inverted(RankPool, RankPool(2, 4, 1.25), "margin") == [1.25]
    assert inverted(PrototypeHead, m, "feat") == []
    assert _exact(m)["tau"].value == 0.25


def test_whole_numbers_an_argument_is_compared_with_choose_the_layer() -> None:
    assert compared_ints(RankPool, "rank") == (1, 2, 3)
    f = _exact(RankPool(3, 4, 1.25))
    assert (f["rank"].value, f["margin"].value) == (3, 1.25)
