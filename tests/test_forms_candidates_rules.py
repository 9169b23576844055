"""The search's rules (stage 3, ``_forms/candidates/rules/``) end to end, each on a real library
class built from a config (random init, nothing downloaded): the relation a rule reads from a
difference rebuilds the module exactly without recording. (Each rule alone:
tests/test_forms_candidates_rule_<relation>.py.)"""

from __future__ import annotations

import functools
import warnings

import pytest
from fixtures.forms import exact
from torch import nn

from torchxray._forms.candidates.rules.problem import literal as _literal

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_sequence_texts_read_back_as_literals() -> None:
    assert _literal("tuple(0, 0)") == "(0, 0,)"
    assert _literal("tuple(3)") == "(3,)"
    assert _literal("tuple()") == "()"
    assert _literal("list(tuple(32), tuple(64))") == "[(32,), (64,)]"


def test_a_grid_from_its_square() -> None:
    # The position table holds (height / patch) ** 2 rows: 16 rows for an 8 x 8 input of 2 x 2
    # patches is a height of 8.
    embeddings = pytest.importorskip("diffusers.models.embeddings")
    m = embeddings.PatchEmbed(height=8, width=8, patch_size=2, in_channels=4, embed_dim=32)
    assert exact(m)["height"].value == 8


def test_a_gate_of_input_plus_hidden_channels_is_rebuilt() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    gru = raft.ConvGRU(input_size=146, hidden_size=96, kernel_size=3, padding=1)
    f = exact(gru)
    assert (f["input_size"].value, f["hidden_size"].value) == (146, 96)


def test_one_value_per_feature_map_moves_as_one_and_with_the_width_it_multiplies() -> None:
    ssd = pytest.importorskip("torchvision.models.detection.ssdlite")
    norm = nn.BatchNorm2d
    reg = ssd.SSDLiteRegressionHead([672, 480, 512], [6, 6, 6], norm)
    assert tuple(exact(reg)["num_anchors"].value) == (6, 6, 6)
    cls = ssd.SSDLiteClassificationHead([672, 480, 512], [6, 6, 6], 91, norm)
    f = exact(cls)
    assert (tuple(f["num_anchors"].value), f["num_classes"].value) == ((6, 6, 6), 91)


def test_a_factory_read_off_a_downsampling_layer_drops_the_stride_its_call_passed() -> None:
    inception = pytest.importorskip("timm.models.inception_v3")
    from functools import partial

    from timm.layers import ConvNormAct

    block = partial(ConvNormAct, padding=0, norm_kwargs=dict(eps=0.001))
    m = inception.InceptionB(288, conv_block=block)
    f = exact(m)
    assert "stride" not in f["conv_block"].value.keywords


def test_the_rest_of_a_split_moves_with_its_divisor() -> None:
    fasternet = pytest.importorskip("timm.models.fasternet")
    f = exact(fasternet.Partial_conv3(40, 4, "split_cat"))
    assert (f["dim"].value, f["n_div"].value) == (40, 4)


def test_a_layer_only_the_build_has_proposes_its_width_was_none() -> None:
    blocks = pytest.importorskip("diffusers.models.unets.unet_2d_blocks")
    # temb_channels: int is required, and None leaves out each resnet's time_emb_proj.
    block = blocks.UNetMidBlock2D(32, None, resnet_groups=8, attention_head_dim=8)
    f = exact(block)
    assert f["temb_channels"].value is None and f.build() is not None


def test_a_fused_gate_hidden_width_moves_its_ratio_in_thirds() -> None:
    timm = pytest.importorskip("timm")
    block = timm.create_model("eva02_tiny_patch14_224", pretrained=False).blocks[0]
    f = exact(block)
    assert f["mlp_ratio"].value == pytest.approx(4 * 2 / 3)


def test_a_numbered_layer_only_the_build_has_shortens_the_per_layer_pairs() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    block = raft.RecurrentBlock(input_size=146, hidden_size=96, kernel_size=(3,), padding=(1,))
    f = exact(block)
    assert len(f["kernel_size"].value) == len(f["padding"].value) == 1


def test_one_of_several_equal_items_moves_alone() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    from torch import nn

    enc = raft.FeatureEncoder(
        block=raft.BottleneckBlock, layers=(32, 32, 64, 96, 128), norm_layer=nn.InstanceNorm2d
    )
    f = exact(enc)
    assert tuple(f["layers"].value) == (32, 32, 64, 96, 128)


def test_a_numbered_layer_left_as_identity_shortens_its_own_sequence() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    enc = raft.MotionEncoder(
        in_channels_corr=196, corr_layers=(96,), flow_layers=(64, 32), out_channels=82
    )
    f = exact(enc)
    assert (tuple(f["corr_layers"].value), tuple(f["flow_layers"].value)) == ((96,), (64, 32))


def test_a_depth_moves_with_one_rate_per_block() -> None:
    fasternet = pytest.importorskip("timm.models.fasternet")
    # drop_path[i] per block: a depth tried alone fails to build, and the rates are not kept.
    block = fasternet.Block(40, 2, 4, 2.0, [0.0, 0.0], 0.0)
    f = exact(block)
    assert f["depth"].value == 2 and f["drop_path"].value == [0.0, 0.0]


def test_a_part_on_one_side_only_moves_the_field_of_its_name() -> None:
    fasternet = pytest.importorskip("timm.models.fasternet")
    # No layer_scale parameter: layer_scale_init_value was 0 (`if value > 0`).
    f = exact(fasternet.MLPBlock(40, 4, 2.0, 0.0, 0.0))
    assert f["layer_scale_init_value"].value == 0.0
    coat = pytest.importorskip("timm.models.coat")
    # A layer shared between blocks is given to each: the live one under the field's name.
    cpe = coat.ConvPosEnc(64, 3)
    f = exact(coat.SerialBlock(64, 8, shared_cpe=cpe))
    assert f["shared_cpe"].value is cpe


def test_an_empty_factory_field_takes_the_live_layer_with_its_required_values() -> None:
    maxxvit = pytest.importorskip("timm.models.maxxvit")
    pos = pytest.importorskip("timm.layers.pos_embed_rel")
    # The parent passes num_heads by keyword; the factory holds the window size.
    rel = functools.partial(pos.RelPosBias, window_size=(7, 7))
    f = exact(maxxvit.Attention2d(128, 256, expand_first=False, rel_pos_cls=rel))
    assert f["rel_pos_cls"].value.keywords["window_size"] == (7, 7)
    assert f["dim_out"].value == 256  # an unset width defaulting to dim takes the live one


def test_a_grids_side_is_tried_before_a_multiple() -> None:
    levit = pytest.importorskip("transformers.models.levit.modeling_levit")
    # 196 biases for 16 built: 14 ** 2 against 4 ** 2 (a resolution), not 49 * 4 (which loops
    # over 49 ** 4 pairs of points).
    f = exact(levit.LevitAttention(128, 16, 4, 2, 14))
    assert f["resolution"].value == 14


def test_a_float_attribute_no_field_holds_scales_a_float_field() -> None:
    std_conv = pytest.importorskip("timm.layers.std_conv")
    gamma = 1.7139588594436646  # timm's gain for ReLU: scale = gamma * fan_in ** -0.5
    f = exact(std_conv.ScaledStdConv2d(3, 16, 7, stride=2, padding=3, gamma=gamma))
    assert f["gamma"].value == pytest.approx(gamma, rel=1e-12)


def test_one_width_per_layer_where_the_module_kept_one() -> None:
    maxxvit = pytest.importorskip("timm.models.maxxvit")
    f = exact(maxxvit.Stem(3, (24, 32)))  # self.out_chs = out_chs[-1]
    assert f["out_chs"].value == (24, 32)


def test_an_unquoted_string_in_a_repr_is_read_as_the_string() -> None:
    effnet = pytest.importorskip("transformers.models.efficientnet.modeling_efficientnet")
    # torch's convs print padding=same without quotes.
    conv = effnet.EfficientNetDepthwiseConv2d(64, kernel_size=3, stride=1, padding="same")
    assert exact(conv)["padding"].value == "same"


def test_one_class_per_layer_where_the_live_layer_has_none() -> None:
    efficientvit = pytest.importorskip("timm.models.efficientvit_mit")
    # act_layer=(Hardswish, None): the second conv's act is an Identity.
    f = exact(efficientvit.DSConv(16, 16, act_layer=(nn.Hardswish, None)))
    assert f["act_layer"].value == (nn.Hardswish, None)


def test_a_grids_side_from_windows_counted_by_floor_division() -> None:
    gcvit = pytest.importorskip("timm.models.gcvit")
    # 64 windows of 7 (56 // 7 = 8 a side): a side of 64 gives 9 ** 2.
    f = exact(gcvit.GlobalContextVitBlock(64, (56, 56), 2, window_size=(7, 7)))
    assert f["feat_size"].value == (56, 56)


def test_relative_positions_across_a_window() -> None:
    halonet = pytest.importorskip("timm.layers.halo_attn")
    # (2 * win_size - 1) rows of relative positions.
    f = exact(halonet.PosEmbedRel(8, 12, 32, 32**-0.5))
    assert f["win_size"].value == 12
