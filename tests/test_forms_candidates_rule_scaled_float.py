"""The rule scaled_float (``_forms/candidates/rules/scaled_float.py``) alone, on a real library class: a
scaled conv's float scale, no field's, scales its gain."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed

from torchxray._forms.candidates.rules import scaled_float

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_float_attribute_no_field_holds_scales_a_float_field() -> None:
    std_conv = pytest.importorskip("timm.layers.std_conv")
    gamma = 1.7139588594436646  # timm's gain for ReLU: scale = gamma * fan_in ** -0.5
    base = dict(in_channels=3, out_channels=16, kernel_size=3)
    got = proposed(
        scaled_float.propose,
        std_conv.ScaledStdConv2d,
        dict(base, gamma=gamma),
        dict(base, gamma=1.0),
    )
    assert got[0]["gamma"] == pytest.approx(gamma, rel=1e-12)
