"""Each field's candidates (stage 2, ``_forms/sources/pools.py`` and the sources it orders): the
values a field is offered by its kind, its name and the module's children, on real library classes
built from configs (random init, nothing downloaded); the form of a module built without recording
is exact, and its unchanged build has the live parts."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

import torchxray as tx
from torchxray._forms.sources.literals import compared_strings
from torchxray._forms.sources.position import index_like, ordinals

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


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


def test_a_string_converted_to_a_string_enum_takes_the_enums_values() -> None:
    pool = pytest.importorskip("timm.layers.adaptive_avgmax_pool")
    assert "NHWC" in compared_strings(pool.FastAdaptiveAvgPool, "input_fmt")
    f = exact(pool.FastAdaptiveAvgPool(flatten=True, input_fmt="NHWC"))
    assert f["input_fmt"].value == "NHWC"


def test_a_layer_class_where_a_registry_name_is_annotated() -> None:
    vitamin = pytest.importorskip("timm.models.vitamin")
    m = vitamin.GeGluMlp(64, 128, act_layer=nn.GELU)
    assert exact(m)["act_layer"].value is nn.GELU


def test_a_string_popped_from_a_kwargs_dict_takes_the_strings_compared_there() -> None:
    nest = pytest.importorskip("timm.models.nest")
    assert "same" in compared_strings(nest.ConvPool, "pad_type")
    f = exact(nest.ConvPool(64, 128, nn.LayerNorm, pad_type="same"))
    assert f["pad_type"].value == "same"


def test_a_flag_named_like_a_layer_is_a_flag() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.ChineseCLIPTextConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32,
    )  # fmt: skip
    # add_pooling_layer=True is no layer class: its opposite drops the pooler.
    f = exact(transformers.ChineseCLIPTextModel(cfg, add_pooling_layer=False))
    assert f["add_pooling_layer"].kind == "bool" and f["add_pooling_layer"].value is False


def test_a_string_default_alone_does_not_bar_a_number() -> None:
    bit = pytest.importorskip("transformers.models.bit.modeling_bit")
    # padding="SAME" by default, given None (a padding from the kernel): the live (3, 3) works.
    conv = bit.WeightStandardizedConv2d(3, 8, kernel_size=7, stride=2, padding=None)
    assert exact(conv)["padding"].value in (None, (3, 3))


def test_an_unannotated_rate_takes_the_rate_its_layers_keep() -> None:
    squeezebert = pytest.importorskip("transformers.models.squeezebert.modeling_squeezebert")
    # dropout_prob has no default and no annotation: nn.Dropout(None) fails; its p is 0.1.
    f = exact(squeezebert.ConvDropoutLayerNorm(16, 16, 1, 0.1))
    assert f["dropout_prob"].value == 0.1
    transformers = pytest.importorskip("transformers")
    cfg = transformers.PoolFormerConfig(depths=[1], hidden_sizes=[16], num_encoder_blocks=1)
    model = transformers.PoolFormerModel(cfg)  # its config is found on the model around it
    # A drop layer that keeps whatever it is given: None builds, but 0.0 is what it holds.
    f = exact(model.encoder.block[0][0].output)
    assert f["dropout_prob"].value == 0.0


def test_an_index_parameter_takes_the_place_of_the_stage() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.PvtV2Config(
        depths=[1] * 4, hidden_sizes=[8, 16, 24, 32], num_attention_heads=[1] * 4,
        mlp_ratios=[2] * 4, sr_ratios=[1] * 4, patch_sizes=[5] * 4, strides=[2] * 4,
        num_encoder_blocks=4,
    )  # fmt: skip
    model = transformers.PvtV2Model(cfg)
    # layer_idx reads the config's per-stage lists: the fourth stage's embedding was given 3,
    # a number none of its layers keeps.
    embedding = model.encoder.layers[3].patch_embedding
    assert ordinals(embedding)[0] == 3  # the numbered container around it says so first
    f = exact(embedding)
    assert f["layer_idx"].value == 3
    assert index_like("stage_idx") and index_like("layer_index") and not index_like("num_heads")


def test_a_singular_unannotated_width_is_a_number_first() -> None:
    oneformer = pytest.importorskip("transformers.models.oneformer.modeling_oneformer")
    # d_model and nhead: per-stage tuples first made both fail the same comparison.
    layer = oneformer.OneFormerTransformerDecoderQueryTransformerDecoderLayer(16, 2, 32)
    f = exact(layer)
    assert (f["d_model"].value, f["nhead"].value) == (16, 2)


def test_a_plural_parameter_takes_one_value_per_layer() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.EncodecConfig(
        num_filters=4, upsampling_ratios=[2], hidden_size=8, codebook_size=16
    )
    model = transformers.EncodecModel(cfg)
    # dilations: one per conv of its block (its kernel sizes are two: the lengths must match).
    f = exact(model.encoder.layers[1])
    assert tuple(f["dilations"].value) == (1, 1)


def test_stages_laid_out_flat_are_read_as_runs() -> None:
    vae = pytest.importorskip("diffusers.models.autoencoders.vae")
    # conv, blocks, conv, blocks, conv in one Sequential: widths (16, 8), one block each.
    f = exact(vae.EncoderTiny(3, 4, (1, 2), (16, 8), "relu"))
    assert f["num_blocks"].value == (1, 2) and f["block_out_channels"].value == (16, 8)
    f = exact(vae.DecoderTiny(4, 3, (2, 1), (16, 8), 2, "relu", "nearest"))
    assert f["num_blocks"].value == (2, 1)


def test_a_stage_takes_the_items_of_its_configs_lists() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LevitConfig(
        image_size=64, hidden_sizes=[16, 32], num_attention_heads=[1, 2], depths=[1, 1],
        key_dim=[8, 8], mlp_ratio=[2, 2], attention_ratio=[2, 2],
        down_ops=[["Subsample", 8, 2, 4, 2, 2]],
    )  # fmt: skip
    model = transformers.LevitModel(cfg)
    # The last stage keeps its config: hidden_sizes=config.hidden_sizes[1], and so on.
    f = exact(model.encoder.stages[1])
    assert f["hidden_sizes"].value == 32 and f["down_ops"].value == [""]


def test_a_pyramid_takes_its_widths_reversed_and_hands_them_on() -> None:
    maskformer = pytest.importorskip("transformers.models.maskformer.modeling_maskformer")
    # Its layers are made from lateral_widths[::-1].
    f = exact(maskformer.MaskFormerFPNModel(64, [16, 32, 48], feature_size=32))
    assert list(f["lateral_widths"].value) == [16, 32, 48]
    # *args and **kwargs handed on to that pyramid: its values, by keyword.
    decoder = maskformer.MaskFormerPixelDecoder(64, [16, 32], feature_size=32)
    f = exact(decoder)
    assert list(f["kwargs"].value["lateral_widths"]) == [16, 32]


def test_a_width_annotated_as_a_tensor_is_a_number() -> None:
    mask2former = pytest.importorskip("transformers.models.mask2former.modeling_mask2former")
    # mask_feature_size: torch.Tensor, given an int (the last layer's width).
    f = exact(mask2former.Mask2FormerMaskPredictor(32, 2, 24))
    assert f["mask_feature_size"].value == 24


def test_an_unhashable_module_has_no_place_and_no_crash() -> None:
    class Unhashable(nn.Module):
        def __init__(self, stage_idx: int) -> None:
            super().__init__()
            self.proj = nn.Linear(4, 4 + stage_idx)

        def __eq__(self, other: object) -> bool:
            return self is other

    holder = nn.ModuleList([Unhashable(0), Unhashable(1)])
    assert ordinals(holder[1]) == [0, 1]  # its place is not known: the usual guesses
    assert ordinals(holder) == [0, 1]  # and the scan past it goes on


def test_a_count_per_stage_or_per_block_is_a_depth() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("ese_vovnet19b_dw", pretrained=False).stages[0]
    f = exact(stage)
    assert (f["block_per_stage"].value, f["layer_per_block"].value) == (1, 3)


def test_a_layer_made_from_a_plain_default_is_not_the_argument() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("efficientvit_m0", pretrained=False).stages[0]
    f = exact(stage)
    assert f["downsample"].value == ("", 1)


def test_widths_that_chain_through_a_container_are_read_in_order() -> None:
    hgnet = pytest.importorskip("timm.models.hgnet")
    f = exact(hgnet.StemV1([3, 16, 16, 32]))
    assert list(f["stem_chs"].value) == [3, 16, 16, 32]


def test_a_string_field_takes_the_strings_its_code_compares_it_with() -> None:
    dpn = pytest.importorskip("timm.models.dpn")
    assert compared_strings(dpn.DualPathBlock, "block_type") == ("proj", "down", "normal")
    f = exact(dpn.DualPathBlock(64, 32, 32, 64, 16, 4, block_type="proj"))
    assert f["block_type"].value == "proj"
    # Through the function the parameter is handed to (create_shortcut(downsample, ...)).
    byobnet = pytest.importorskip("timm.models.byobnet")
    assert "conv1x1" in compared_strings(byobnet.BottleneckBlock, "downsample")
    # A key of the module-level table the parameter is looked up in.
    blocks = pytest.importorskip("diffusers.models.unets.unet_1d_blocks")
    assert "lanczos3" in compared_strings(blocks.Downsample1d, "kernel")
    assert exact(blocks.Downsample1d(kernel="lanczos3"))["kernel"].value == "lanczos3"


def test_lazy_layers_never_called_give_no_dimensions_and_the_form_answers() -> None:
    # A lazy layer's tensors have no shape until its first call: reading one raised inside the
    # pools (issue 58, the held-out set's lazy model); the form answers instead.
    class Head(nn.Module):
        def __init__(self, hidden: int, classes: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.LazyLinear(hidden), nn.ReLU(), nn.LazyLinear(classes))

    head = Head(16, 3)
    f = tx.form(head)
    assert isinstance(f.inexact, str)
    assert {x.name for x in f.fields} == {"hidden", "classes"}
