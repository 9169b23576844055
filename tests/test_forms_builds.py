"""The search's rules for classes whose build with the values a module keeps fails or misses a
part, each on a real library class built from a small config (random init, nothing downloaded):
the form of a module built without recording is exact, and its unchanged build has the live
module's parts."""

from __future__ import annotations

import warnings

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms import fill
from torchxray._forms.exact import build_meta
from torchxray._forms.parts import parts

warnings.filterwarnings("ignore")


@pytest.fixture(autouse=True)
def _roomy_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # The rules, not the budget: a loaded machine must not cut a search short here.
    monkeypatch.setattr(fill, "SEARCH_SECONDS", 5.0)


def _exact(m: nn.Module) -> tx.Form:
    f = tx.form(m)
    assert f.inexact == "", f.inexact
    assert parts(build_meta(f)).items == parts(m).items
    return f


def test_a_flag_named_like_a_layer_is_a_flag() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.ChineseCLIPTextConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32,
    )  # fmt: skip
    # add_pooling_layer=True is no layer class: its opposite drops the pooler.
    f = _exact(transformers.ChineseCLIPTextModel(cfg, add_pooling_layer=False))
    assert f["add_pooling_layer"].kind == "bool" and f["add_pooling_layer"].value is False


def test_a_string_default_alone_does_not_bar_a_number() -> None:
    bit = pytest.importorskip("transformers.models.bit.modeling_bit")
    # padding="SAME" by default, given None (a padding from the kernel): the live (3, 3) works.
    conv = bit.WeightStandardizedConv2d(3, 8, kernel_size=7, stride=2, padding=None)
    assert _exact(conv)["padding"].value in (None, (3, 3))


def test_an_unannotated_rate_takes_the_rate_its_layers_keep() -> None:
    squeezebert = pytest.importorskip("transformers.models.squeezebert.modeling_squeezebert")
    # dropout_prob has no default and no annotation: nn.Dropout(None) fails; its p is 0.1.
    f = _exact(squeezebert.ConvDropoutLayerNorm(16, 16, 1, 0.1))
    assert f["dropout_prob"].value == 0.1
    transformers = pytest.importorskip("transformers")
    cfg = transformers.PoolFormerConfig(depths=[1], hidden_sizes=[16], num_encoder_blocks=1)
    model = transformers.PoolFormerModel(cfg)  # its config is found on the model around it
    # A drop layer that keeps whatever it is given: None builds, but 0.0 is what it holds.
    f = _exact(model.encoder.block[0][0].output)
    assert f["dropout_prob"].value == 0.0


def test_a_required_value_proven_none_is_given() -> None:
    transformers = pytest.importorskip("transformers")
    swin2sr = pytest.importorskip("transformers.models.swin2sr.modeling_swin2sr")
    cfg = transformers.Swin2SRConfig(
        image_size=16, embed_dim=12, depths=[1], num_heads=[2], window_size=4
    )
    # drop_path is required and unused: None rebuilds it, and the form gives None.
    stage = swin2sr.Swin2SRStage(cfg, 12, (4, 4), 1, 2, [0.0])
    f = _exact(stage)
    assert f.build() is not None
