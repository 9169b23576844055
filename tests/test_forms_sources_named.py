"""A layer argument registered under a name written beside it (``_forms/sources/named.py``):
the zoo's ``tests/handwritten/styles8_r7b.py``."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles8_r7b import (
    ActorTrunk,
    EncoderDecoderDict,
    PolicyWithHeads,
    SpectrogramEncoder,
)
from torchxray._forms.sources.named import registered

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class _Chain(nn.Sequential):
    def __init__(self, body, scale=2):
        super().__init__(OrderedDict([("body", body), ("up", nn.Upsample(scale_factor=scale))]))


class _Rebound(nn.Module):
    def __init__(self, body):
        super().__init__()
        body = nn.Sequential(body)
        self.add_module("body", body)


def test_a_layer_handed_to_a_dict_base_is_read_under_its_key() -> None:
    enc, dec = SpectrogramEncoder(12, 16), nn.Conv1d(16, 12, 3)
    m = EncoderDecoderDict(enc, dec, skip=False)
    assert registered(EncoderDecoderDict, m, "encoder") == [enc]
    assert registered(EncoderDecoderDict, m, "decoder") == [dec]
    assert registered(EncoderDecoderDict, m, "skip") == []
    f = _exact(m)
    assert f["encoder"].value is enc and f["skip"].value is False


def test_a_named_pair_and_a_registration_call_name_the_layer() -> None:
    body = nn.Conv2d(3, 4, 3)
    assert registered(_Chain, _Chain(body, 4), "body") == [body]
    assert _exact(_Chain(body, 4))["body"].value is body
    pi, v = ActorTrunk(6, 24, depth=3), ActorTrunk(6, 12)
    m = PolicyWithHeads(pi, v, actions=5, hidden=24)
    assert registered(PolicyWithHeads, m, "actor_net") == [pi]
    assert registered(PolicyWithHeads, m, "critic_net") == [v]
    assert _exact(m)["critic_net"].value is v


def test_a_name_rebound_in_the_constructor_offers_nothing() -> None:
    assert registered(_Rebound, _Rebound(nn.ReLU()), "body") == []
