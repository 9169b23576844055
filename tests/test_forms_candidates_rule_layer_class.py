"""The rule layer_class (``_forms/candidates/rules/layer_class.py``) alone, on a real library class: an
activation named by a string takes the live layer's name, then its class."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

from torchxray._forms.candidates.rules import layer_class

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_string_that_named_the_built_layer_takes_the_live_one() -> None:
    layers = pytest.importorskip("timm.layers")
    live = dict(in_channels=4, out_channels=8, act_layer="silu")
    built = dict(in_channels=4, out_channels=8, act_layer="relu")
    got = proposed(layer_class.propose, layers.ConvNormAct, live, built)
    assert got[:2] == [{"act_layer": "silu"}, {"act_layer": nn.SiLU}]
    assert rebuilds(layers.ConvNormAct, live, {**built, **got[0]})


def test_a_string_that_named_the_built_class_takes_the_live_class_name_in_its_case() -> None:
    # ``getattr(nn, kind)``: the class's own name, as the string held the built one's.
    from zoo import blocks as B

    got = proposed(layer_class.propose, B.RecurrentHead, dict(kind="RNN"), dict(kind="LSTM"))
    assert got[0] == {"kind": "RNN"}
    assert rebuilds(B.RecurrentHead, dict(kind="RNN"), got[0])
