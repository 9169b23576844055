"""What a failed build's message teaches the search (stage 3, ``_forms/candidates/failed.py``): a
number used as a sequence, a layer where none is, a class without the attribute read, each fixed
in turn while nothing builds; on real library classes (random init, nothing downloaded): the form
of a module built without recording is exact, and its unchanged build has the live parts."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


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


def test_a_class_without_the_attribute_the_constructor_reads_tries_the_layers_classes() -> None:
    timm = pytest.importorskip("timm")
    from timm.models.resnet import BasicBlock

    module = timm.create_model("hrnet_w18_small", pretrained=False).stage2[0]
    f = exact(module)
    assert f["block_types"].value is BasicBlock


def test_a_layer_handed_in_is_found_in_the_container_made_of_it() -> None:
    mvit = pytest.importorskip("torchvision.models.video.mvit")
    from torch import nn

    pool = mvit.Pool(nn.Conv3d(8, 8, 3, padding=1, groups=8, bias=False), nn.LayerNorm(8))
    f = exact(pool)
    assert isinstance(f["norm"].value, nn.LayerNorm)
