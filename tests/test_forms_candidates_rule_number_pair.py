"""The rule number_pair (``_forms/candidates/rules/number_pair.py``) alone, on a real library class: an MLP's
hidden width read off its first layer."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import number_pair

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_live_number_goes_to_the_field_that_held_the_built_one() -> None:
    layers = pytest.importorskip("timm.layers")
    live, built = (
        dict(in_features=32, hidden_features=64),
        dict(in_features=32, hidden_features=128),
    )
    got = proposed(number_pair.propose, layers.Mlp, live, built)
    assert {"hidden_features": 64} in got
    assert rebuilds(layers.Mlp, live, {**built, "hidden_features": 64})
