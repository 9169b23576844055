"""The rule depth (``_forms/candidates/rules/depth.py``) alone, on a real library class: a stage built one
block deeper moves its depth with one rate per block."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import depth

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_container_of_another_length_moves_the_depth_with_its_rates() -> None:
    convnext = pytest.importorskip("timm.models.convnext")
    layers = pytest.importorskip("timm.layers")
    base = dict(
        in_chs=16, out_chs=32, norm_layer=layers.LayerNorm2d, norm_layer_cl=layers.LayerNorm
    )
    live, built = dict(base, depth=2), dict(base, depth=3)
    got = proposed(depth.propose, convnext.ConvNeXtStage, live, built)
    assert got[0] == {"depth": 2, "drop_path_rates": [0.0, 0.0]}
    assert rebuilds(convnext.ConvNeXtStage, live, {**built, **got[0]})
