"""Sizes read back off the shapes of the buffers a module keeps (``_forms/sources/shapes.py``):
the zoo's ``tests/handwritten/styles7_r6b.py`` and ``styles8_r7b.py``."""

from __future__ import annotations

import pytest
import torch
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6b import AnchorCenters, CoordinateEncoder
from tests.handwritten.styles8_r7b import FlowWarp, VoxelQueryDecoder
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


def test_a_grid_past_a_batch_axis_and_before_a_channel_axis_is_read() -> None:
    m = nn.Module()
    m.register_buffer("grid", torch.zeros(1, 6, 7, 4))
    assert [6, 7] in shapes(m)
    # Handed to a helper that iterates it (the int a failed build blames, ``failed.py``).
    f = _exact(VoxelQueryDecoder(6, (4, 5, 3), width=16))
    assert tuple(f["volume"].value) == (4, 5, 3) and f["width"].value == 16
    assert tuple(_exact(FlowWarp(3, (12, 20)))["frame_size"].value) == (12, 20)
