"""The rule keyword_item (``_forms/candidates/rules/keyword_item.py``) alone, on a real library class: a
norm's eps in its repr goes to the field named eps."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import keyword_item

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_repr_item_goes_to_the_field_of_its_name() -> None:
    resnet = pytest.importorskip("diffusers.models.resnet")
    live, built = dict(in_channels=32, eps=1e-5), dict(in_channels=32, eps=1e-6)
    got = proposed(keyword_item.propose, resnet.ResnetBlock2D, live, built)
    assert got and all(change == {"eps": 1e-5} for change in got)
    assert rebuilds(resnet.ResnetBlock2D, live, {**built, **got[0]})
