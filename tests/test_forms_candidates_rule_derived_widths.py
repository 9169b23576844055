"""The rule derived_widths (``_forms/candidates/rules/derived_widths.py``) alone, on a real library class: an
attention's head width moves its number of heads, the width kept."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import derived_widths

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_derived_width_moves_the_field_it_is_divided_by() -> None:
    vit = pytest.importorskip("timm.models.vision_transformer")
    live, built = dict(dim=64, num_heads=4), dict(dim=64, num_heads=8)  # head_dim 16 against 8
    got = proposed(derived_widths.propose, vit.Attention, live, built)
    assert {"num_heads": 4} in got
    assert rebuilds(vit.Attention, live, {**built, "num_heads": 4})
