"""The search's rules for classes whose build with the values a module keeps fails or misses a
part, each on a real library class built from a small config (random init, nothing downloaded):
the form of a module built without recording is exact, and its unchanged build has the live
module's parts."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

from torchxray._forms.sources.position import index_like, ordinals

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


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


def test_a_required_value_proven_none_is_given() -> None:
    transformers = pytest.importorskip("transformers")
    swin2sr = pytest.importorskip("transformers.models.swin2sr.modeling_swin2sr")
    cfg = transformers.Swin2SRConfig(
        image_size=16, embed_dim=12, depths=[1], num_heads=[2], window_size=4
    )
    # drop_path is required and unused: None rebuilds it, and the form gives None.
    stage = swin2sr.Swin2SRStage(cfg, 12, (4, 4), 1, 2, [0.0])
    f = exact(stage)
    assert f.build() is not None


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


def test_a_number_used_as_a_sequence_tries_the_grids_the_layers_keep() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.DonutSwinConfig(
        image_size=32, patch_size=4, embed_dim=8, depths=[1, 1], num_heads=[1, 2], window_size=2
    )
    model = transformers.DonutSwinModel(cfg)
    # grid_size[0]: an int fails ("'int' object is not subscriptable"); the stages keep (8, 8).
    f = exact(model.encoder)
    assert f["grid_size"].value == (8, 8)


def test_a_value_added_as_a_layer_tries_the_layers_the_module_holds() -> None:
    mask2former = pytest.importorskip("transformers.models.mask2former.modeling_mask2former")
    # activation is a layer instance it keeps: "int is not a Module subclass" said so.
    block = mask2former.Mask2FormerPredictionBlock(8, 16, activation=nn.ReLU())
    f = exact(block)
    assert isinstance(f["activation"].value, nn.ReLU)
    oneformer = pytest.importorskip("transformers.models.oneformer.modeling_oneformer")
    # decoder_layer is cloned: the layer's class fails ("... is not a Module subclass").
    layer = oneformer.OneFormerTransformerDecoderQueryTransformerDecoderLayer(16, 2, 32)
    decoder = oneformer.OneFormerTransformerDecoderQueryTransformerDecoder(layer, 2)
    f = exact(decoder)
    assert type(f["decoder_layer"].value) is type(layer) and f.build() is not None


def test_a_singular_unannotated_width_is_a_number_first() -> None:
    oneformer = pytest.importorskip("transformers.models.oneformer.modeling_oneformer")
    # d_model and nhead: per-stage tuples first made both fail the same comparison.
    layer = oneformer.OneFormerTransformerDecoderQueryTransformerDecoderLayer(16, 2, 32)
    f = exact(layer)
    assert (f["d_model"].value, f["nhead"].value) == (16, 2)


def test_a_layer_only_the_build_has_proposes_its_width_was_none() -> None:
    blocks = pytest.importorskip("diffusers.models.unets.unet_2d_blocks")
    # temb_channels: int is required, and None leaves out each resnet's time_emb_proj.
    block = blocks.UNetMidBlock2D(32, None, resnet_groups=8, attention_head_dim=8)
    f = exact(block)
    assert f["temb_channels"].value is None and f.build() is not None


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


def test_per_block_values_are_fixed_one_message_after_the_other() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.HieraConfig(
        embed_dim=8, image_size=[32, 32], patch_size=[4, 4], patch_stride=[2, 2],
        depths=[2, 1], num_heads=[1, 2], masked_unit_size=[4, 4], num_query_pool=1,
    )  # fmt: skip
    model = transformers.HieraModel(cfg)
    # drop_path[i] then query_stride[i]: each number fails as a sequence, one after the other.
    f = exact(model.encoder.stages[0])
    assert f["drop_path"].value == [0.0, 0.0] and tuple(f["query_stride"].value) == (1, 1)


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


def test_a_class_used_as_a_sequence_tries_the_widths_of_the_layers() -> None:
    keypoint = pytest.importorskip("torchvision.models.detection.keypoint_rcnn")
    # layers: one width per conv; a class there "is not iterable".
    f = exact(keypoint.KeypointRCNNHeads(16, (8, 12)))
    assert tuple(f["layers"].value) == (8, 12)


def test_unset_rates_and_layer_classes_are_set_one_message_after_the_other() -> None:
    nest = pytest.importorskip("timm.models.nest")
    # len(drop_path) fails on None, then norm_layer(dim) and act_layer() on None.
    level = nest.NestLevel(
        4, 2, 4, 2, 2, 16, drop_path=[0.0, 0.1], norm_layer=nn.LayerNorm, act_layer=nn.GELU
    )
    f = exact(level)
    assert f["drop_path"].value == [0.0, 0.1] and f["norm_layer"].value is nn.LayerNorm


def test_an_int_tried_for_a_pair_that_is_then_indexed_is_no_step() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("convnext_atto", pretrained=False).stages[0]
    # dilation=7 fails as "'int' object is not subscriptable": the int just tried is to blame,
    # not a step towards norm_layer (None is not callable).
    f = exact(stage)
    assert tuple(f["dilation"].value) == (1, 1)


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
