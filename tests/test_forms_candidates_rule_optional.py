"""The rule optional (``_forms/candidates/rules/optional.py``) alone, on a real library class: a conv only the
build made turns the flag that made it off."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import optional

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_part_on_one_side_only_flips_a_flag() -> None:
    downsampling = pytest.importorskip("diffusers.models.downsampling")
    live, built = dict(channels=8, use_conv=False), dict(channels=8, use_conv=True)
    got = proposed(optional.propose, downsampling.Downsample2D, live, built)
    assert got[0] == {"use_conv": False}
    assert rebuilds(downsampling.Downsample2D, live, {**built, **got[0]})
