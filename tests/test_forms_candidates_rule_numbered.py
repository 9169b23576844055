"""The rule numbered (``_forms/candidates/rules/numbered.py``) alone, on a real library class: a second GRU
only the build made shortens the per-layer pairs together."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import numbered

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_numbered_layer_only_the_build_has_shortens_the_sequences() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    live = dict(input_size=8, hidden_size=8, kernel_size=((1, 5),), padding=((0, 2),))
    built = dict(input_size=8, hidden_size=8)  # two of each: convgru2 made
    got = proposed(numbered.propose, raft.RecurrentBlock, live, built)
    assert got[0] == {"kernel_size": ((1, 5),), "padding": ((0, 2),)}
    assert rebuilds(raft.RecurrentBlock, live, {**built, **got[0]})
