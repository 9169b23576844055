"""A list of block descriptions read back from the blocks' own forms (``_forms/sources/blocklists.py``,
issue 40 item 4): a whole model built from one small config object per block or per stage keeps
no list; its blocks' forms find each object. Real torchvision classes built from their configs,
random init."""

from __future__ import annotations

import warnings

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.sources.blocklists import block_lists, element_classes

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _efficientnet(stages: int, **kw: object) -> nn.Module:
    eff = pytest.importorskip("torchvision.models.efficientnet")
    setting, _ = eff._efficientnet_conf("efficientnet_b0", width_mult=1.0, depth_mult=1.0)
    return eff.EfficientNet(setting[:stages], dropout=0.3, **kw)


def test_the_element_classes_come_from_the_annotation() -> None:
    tvm = pytest.importorskip("torchvision.models")
    eff = pytest.importorskip("torchvision.models.efficientnet")
    got = element_classes(tvm.EfficientNet, "inverted_residual_setting")
    assert got == (eff.MBConvConfig, eff.FusedMBConvConfig)
    assert element_classes(tvm.EfficientNet, "dropout") == ()


def test_blocks_in_stages_give_one_description_per_stage() -> None:
    m = _efficientnet(3)
    (read,) = block_lists(m, "inverted_residual_setting", tx.form)
    # num_layers is read only by the model that repeats the block: each stage's length.
    assert [(c.input_channels, c.out_channels, c.stride, c.num_layers) for c in read] == [
        (32, 16, 1, 1),
        (16, 24, 2, 2),
        (24, 40, 2, 2),
    ]


def test_blocks_laid_out_flat_give_one_description_per_block() -> None:
    tvm = pytest.importorskip("torchvision.models")
    m = tvm.mobilenet_v3_small()
    (read,) = block_lists(m, "inverted_residual_setting", tx.form)
    assert len(read) == 11
    assert [(c.input_channels, c.out_channels) for c in read[:2]] == [(16, 16), (16, 24)]


def test_a_model_built_from_block_descriptions_rebuilds_exactly() -> None:
    m = _efficientnet(3, num_classes=10)
    f = tx.form(m)
    assert f.inexact == ""
    assert f["inverted_residual_setting"].origin == "inferred"
    assert (f["dropout"].value, f["num_classes"].value) == (0.3, 10)
    built = f.build(num_classes=5)
    assert built.classifier[1].out_features == 5 and len(built.features) == len(m.features)


def test_a_block_whose_form_is_not_exact_gives_no_reading() -> None:
    m = _efficientnet(2)
    m.features[1][0].block[0][1].eps = 0.5  # changed after it was built: no form rebuilds it
    assert block_lists(m, "inverted_residual_setting", tx.form) == []
