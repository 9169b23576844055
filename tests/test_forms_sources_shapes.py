"""Sizes read back off the shapes of the buffers a module keeps (``_forms/sources/shapes.py``):
the zoo's ``tests/handwritten/styles7_r6b.py``."""

from __future__ import annotations

import pytest
import torch
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6b import AnchorCenters, CoordinateEncoder
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
