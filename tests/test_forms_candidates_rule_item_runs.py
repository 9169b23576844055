"""The rule item_runs (``_forms/candidates/rules/item_runs.py``) alone, on a real library class: a conv's
kernel read off its repr replaces the pair of the layer that made it."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import item_runs

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_pair_per_layer_takes_the_live_numbers_at_its_place() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    live = dict(input_size=8, hidden_size=8)  # kernel_size=((1, 5), (5, 1))
    built = dict(input_size=8, hidden_size=8, kernel_size=((1, 3), (5, 1)))
    got = proposed(item_runs.propose, raft.RecurrentBlock, live, built)
    assert {"kernel_size": ((1, 5), (5, 1))} in got
    assert rebuilds(raft.RecurrentBlock, live, {**built, "kernel_size": ((1, 5), (5, 1))})
