"""The rule number_pair (``_forms/candidates/rules/number_pair.py``) alone, on a real library class: an MLP's
hidden width read off its first layer."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

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


class _Stages(nn.Module):
    """Small numbers in many fields; the stage widths hold the built width itself."""

    def __init__(self, ratio=2, groups=2, expand=4, kernel=3, dims=(8, 8, 8)):
        super().__init__()
        self.stages = nn.ModuleList(
            nn.Conv1d(d * ratio // ratio, d, kernel, groups=groups) for d in dims
        )
        self.expand = nn.Linear(dims[-1], dims[-1] * expand)


def test_the_fields_that_hold_the_built_number_are_proposed_first() -> None:
    live = dict(ratio=2, groups=2, expand=4, kernel=3, dims=(8, 48, 8))
    built = {**live, "dims": (8, 8, 8)}
    got = proposed(number_pair.propose, _Stages, live, built)
    # stages.1 holds 8 where 48 lives: the list holding 8 first, before ratio 2 (8 = 4 * 2).
    first = next(c for c in got if "dims" in c or "ratio" in c or "expand" in c)
    assert "dims" in first
    assert rebuilds(_Stages, live, {**built, "dims": (8, 48, 8)})
