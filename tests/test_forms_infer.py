"""The search's general rules, each on a real library class built from a config (random init,
nothing downloaded): the form of a module built without recording is exact, and its unchanged
build has the live module's parts."""

from __future__ import annotations

import functools
import importlib
import warnings

import pytest
from fixtures.forms import exact

from torchxray._forms.candidates.rules.problem import literal as _literal

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_sequence_texts_read_back_as_literals() -> None:
    assert _literal("tuple(0, 0)") == "(0, 0,)"
    assert _literal("tuple(3)") == "(3,)"
    assert _literal("tuple()") == "()"
    assert _literal("list(tuple(32), tuple(64))") == "[(32,), (64,)]"


def test_two_wrong_values_are_fixed_in_turn_while_no_build_succeeds() -> None:
    # SwinStage keeps neither its per-block drop rates (a float fails first) nor the class its
    # downsample layer was made from (the live layer fails next, further on): each fix lets the
    # constructor get further, and that is the search's step.
    transformers = pytest.importorskip("transformers")
    cfg = transformers.SwinConfig(embed_dim=32, depths=[2, 2], num_heads=[2, 4], image_size=64)
    model = transformers.SwinModel(cfg)
    f = exact(model.encoder.layers[0])
    assert isinstance(f["drop_path"].value, list)
    assert f["downsample"].value is type(model.encoder.layers[0].downsample)
    # The encoder's grid is the int tuple its blocks keep (input_resolution).
    assert exact(model.encoder)["grid_size"].value == (16, 16)


def test_a_layer_held_under_the_parameters_name_gives_its_rate_or_its_name() -> None:
    transformers = pytest.importorskip("transformers")
    # Segformer's drop path is Identity for rate 0: the rate is 0.0, not the layer.
    seg = transformers.SegformerConfig(
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        num_attention_heads=[1, 2],
        decoder_hidden_size=32,
    )
    exact(transformers.SegformerModel(seg).stages[0].blocks[0])
    # SqueezeBert keeps ACT2FN["gelu"], a module: the constructor takes the registry's name.
    sq = transformers.SqueezeBertConfig(
        hidden_size=64,
        embedding_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=128,
    )
    f = exact(transformers.SqueezeBertModel(sq).encoder.layers[0].intermediate)
    assert f["act"].value == "gelu"


def test_keyword_dicts_and_a_move_past_a_no_better_proposal() -> None:
    # kernel_size 3 alone scores no better (padding then differs); with padding=0 on top it is
    # exact; the norm's eps came in a keyword dict (norm_kwargs).
    timm = pytest.importorskip("timm")
    conv = timm.layers.ConvNormAct(
        3, 32, kernel_size=3, stride=2, padding=0, norm_kwargs={"eps": 1e-3}
    )
    f = exact(conv)
    assert f["norm_kwargs"].value == {"eps": 1e-3}
    block = functools.partial(timm.layers.ConvNormAct, padding=0, norm_kwargs={"eps": 1e-3})
    exact(importlib.import_module("timm.models.inception_v4").Mixed3a(conv_block=block))


def test_a_grid_from_its_square() -> None:
    # The position table holds (height / patch) ** 2 rows: 16 rows for an 8 x 8 input of 2 x 2
    # patches is a height of 8.
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    m = embeddings.PatchEmbed(height=8, width=8, patch_size=2, in_channels=4, embed_dim=32)
    assert exact(m)["height"].value == 8
