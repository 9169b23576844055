"""The rule factories (``_forms/candidates/rules/factories.py``) alone, on a real library class: a norm made
with its own eps is proposed as a factory for the field that made it."""

from __future__ import annotations

import functools

import pytest
from fixtures.rules import child, proposed, rebuilds

from torchxray._forms.candidates.rules import factories

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_factory_field_takes_the_live_layer_again() -> None:
    layers = pytest.importorskip("timm.layers")
    live = dict(
        in_channels=4, out_channels=8, norm_layer=functools.partial(layers.BatchNormAct2d, eps=1e-3)
    )
    built = dict(in_channels=4, out_channels=8, norm_layer=layers.BatchNormAct2d)
    got = proposed(factories.propose, layers.ConvNormAct, live, built, child)
    first = got[0]["norm_layer"]
    assert isinstance(first, functools.partial) and first.func is layers.BatchNormAct2d
    assert first.keywords == {"eps": 1e-3}
    assert rebuilds(layers.ConvNormAct, live, {**built, **got[0]})
