"""The rule kwargs_dict (``_forms/candidates/rules/kwargs_dict.py``) alone, on a real library class: a norm's
eps is added to the keywords dict handed to the norm."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import kwargs_dict

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_keyword_of_a_layer_goes_into_a_keywords_dict() -> None:
    layers = pytest.importorskip("timm.layers")
    live = dict(in_channels=4, out_channels=8, norm_kwargs=dict(eps=1e-3))
    built = dict(in_channels=4, out_channels=8)
    got = proposed(kwargs_dict.propose, layers.ConvNormAct, live, built)
    assert {"norm_kwargs": {"eps": 1e-3}} in got
    assert rebuilds(layers.ConvNormAct, live, {**built, "norm_kwargs": {"eps": 1e-3}})
