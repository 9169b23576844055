"""A model given to a constructor that copies its layers, read back as those layers gathered under
their names (``_forms/sources/gathered.py``, issue 40 item 4). Real torchvision classes built from their
configs, random init."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.sources.gathered import gathered, takes_module

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _getter() -> nn.Module:
    seg = pytest.importorskip("torchvision.models.segmentation")
    return seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None).backbone


def test_a_module_parameter_is_told_by_its_annotation() -> None:
    utils = pytest.importorskip("torchvision.models._utils")
    assert takes_module(utils.IntermediateLayerGetter, "model")
    assert not takes_module(utils.IntermediateLayerGetter, "return_layers")


def test_the_kept_layers_are_gathered_under_their_names() -> None:
    m = _getter()
    first = gathered(m, "model")[0]
    assert list(dict(first.named_children())) == list(dict(m.named_children()))
    assert all(a is b for a, b in zip(first.children(), m.children()))


def test_a_layer_getter_rebuilds_exactly_and_its_return_layers_edit() -> None:
    m = _getter()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    f = tx.form(m)
    assert f.inexact == ""
    assert f["model"].origin == "inferred"
    built = f.build(return_layers={"16": "out", "4": "aux"}).eval()
    # The rebuild holds the live layers (as a form given a live layer does): in eval mode its
    # forward leaves their running statistics alone.
    out = built(torch.randn(1, 3, 64, 64))
    assert list(out) == ["aux", "out"] or list(out) == ["out", "aux"]
    assert list(dict(m.named_children())) == [str(i) for i in range(17)]  # the live one as it was
    assert all(torch.equal(v, m.state_dict()[k]) for k, v in before.items())


def test_a_backbone_handed_on_to_a_getter_is_read_off_the_getter() -> None:
    det = pytest.importorskip("torchvision.models.detection")
    m = det.fasterrcnn_mobilenet_v3_large_fpn(weights=None, weights_backbone=None).backbone
    f = tx.form(m)
    assert f.inexact == ""
    assert f["in_channels_list"].value == [160, 960]
