"""The rule unset_width (``_forms/candidates/rules/unset_width.py``) alone, on a real library class: a time-
embedding layer only the build made proposes its width None."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import unset_width

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_layer_made_from_a_width_proposes_the_width_none() -> None:
    resnet = pytest.importorskip("diffusers.models.resnet")
    live, built = dict(in_channels=32, temb_channels=None), dict(in_channels=32, temb_channels=512)
    got = proposed(unset_width.propose, resnet.ResnetBlock2D, live, built)
    assert {"temb_channels": None} in got
    assert rebuilds(resnet.ResnetBlock2D, live, {**built, "temb_channels": None})
    assert not rebuilds(resnet.ResnetBlock2D, live, {**built, "in_channels": None})
