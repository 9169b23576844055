"""Per-stage config objects that no block takes, read from the stages (``_forms/sources/stageconfigs.py``,
issue 40 item 4): torchvision's ``ConvNeXt(block_setting: list[CNBlockConfig])`` makes its blocks
from the configs' widths (``CNBlock(dim, ...)``); the stages give each member back. Real
torchvision classes built from their configs, random init (video models on meta); and
``VideoResNet(conv_makers=[Conv3DSimple, ...])``, one class per stage; ``SwinTransformer``'s
per-stage lists, its stages among patch merges."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.sources.blocklists import element_classes
from torchxray._forms.sources.stageconfigs import (
    patch_sizes,
    stage_classes,
    stage_configs,
    stage_values,
)

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _convnext(**kw: object) -> nn.Module:
    cn = pytest.importorskip("torchvision.models.convnext")
    setting = [
        cn.CNBlockConfig(16, 32, 2),
        cn.CNBlockConfig(32, 64, 1),
        cn.CNBlockConfig(64, None, 3),
    ]
    return cn.ConvNeXt(setting, **kw)


def _members(read: list[object]) -> list[tuple[object, ...]]:
    return [(c.input_channels, c.out_channels, c.num_layers) for c in read]  # type: ignore[attr-defined]


def test_each_member_is_read_from_its_stage() -> None:
    m = _convnext()
    (read,) = stage_configs(m, element_classes(type(m), "block_setting"))
    # The last stage makes no layer after it: None, as its annotation allows.
    assert _members(read) == [(16, 32, 2), (32, 64, 1), (64, None, 3)]


def test_a_model_without_stages_gives_no_reading() -> None:
    cn = pytest.importorskip("torchvision.models.convnext")
    assert stage_configs(nn.Sequential(nn.Linear(2, 2)), (cn.CNBlockConfig,)) == []


def test_a_model_built_from_per_stage_configs_rebuilds_exactly() -> None:
    m = _convnext(stochastic_depth_prob=0.1, num_classes=10)
    f = tx.form(m)
    assert f.inexact == ""
    assert f["block_setting"].origin == "inferred"
    assert _members(f["block_setting"].value) == [(16, 32, 2), (32, 64, 1), (64, None, 3)]
    assert f["stochastic_depth_prob"].value == 0.1
    built = f.build(num_classes=5)
    assert built.classifier[-1].out_features == 5


def _video(name: str) -> nn.Module:
    video = pytest.importorskip("torchvision.models.video")
    with torch.device("meta"):
        return getattr(video, name)()


def test_a_sequence_of_classes_is_read_per_stage() -> None:
    video = pytest.importorskip("torchvision.models.video.resnet")
    m = _video("mc3_18")
    (read,) = stage_classes(m, type(m), "conv_makers")
    assert read == [video.Conv3DSimple] + [video.Conv3DNoTemporal] * 3
    assert stage_classes(m, type(m), "layers") == []  # a list of ints names no class


def test_a_model_built_from_per_stage_classes_rebuilds_exactly() -> None:
    video = pytest.importorskip("torchvision.models.video.resnet")
    f = tx.form(_video("r2plus1d_18"))
    assert f.inexact == ""
    assert f["conv_makers"].value == [video.Conv2Plus1D] * 4
    assert f["stem"].value is video.R2Plus1dStem


def _swin() -> nn.Module:
    swin = pytest.importorskip("torchvision.models.swin_transformer")
    return swin.SwinTransformer([4, 4], 16, [2, 1], [2, 4], [7, 7], stochastic_depth_prob=0.1)


def test_per_stage_lists_are_read_from_stages_among_other_parts() -> None:
    m = _swin()  # features: patch embedding, stage, patch merge, stage
    assert stage_values(m, "depths") == [[2, 1]]
    assert stage_values(m, "num_heads") == [[2, 4]]
    assert stage_values(m, "window_size") == [[7, 7]]  # alike in every stage
    assert patch_sizes(m, "patch_size") == [[4, 4]]
    assert patch_sizes(m, "embed_dim") == []


def test_a_model_with_stages_among_other_parts_rebuilds_exactly() -> None:
    f = tx.form(_swin())
    assert f.inexact == ""
    got = [f[n].value for n in ("patch_size", "embed_dim", "depths", "num_heads", "window_size")]
    assert got == [[4, 4], 16, [2, 1], [2, 4], [7, 7]]
    assert f["stochastic_depth_prob"].value == 0.1
