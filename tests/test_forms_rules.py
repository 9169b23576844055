"""The search's rules for a rebuild that builds but differs, each on a real library class built
from its constructor (random init, nothing downloaded): the form of a module built without
recording is exact, and its unchanged build has the live module's parts."""

from __future__ import annotations

import functools
import warnings

import pytest
from fixtures.forms import exact
from torch import nn

from torchxray._forms.sources.literals import compared_strings

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_member_of_a_dataclass_argument_is_changed_on_a_copy() -> None:
    byobnet = pytest.importorskip("timm.models.byobnet")
    # The stem keeps no LayerFn: its layers were made by the factories it holds, SiLU inside.
    layers = byobnet.get_layer_fns(byobnet.ByoModelCfg(blocks=(), act_layer="silu"))
    f = exact(byobnet.Stem(3, 64, layers=layers))
    assert f["layers"].value.conv_norm_act.keywords["act_layer"] is nn.SiLU
    maxxvit = pytest.importorskip("timm.models.maxxvit")
    # A cfg dataclass whose activation is named by a string.
    cfg = maxxvit.MaxxVitConvCfg(act_layer="silu")
    f = exact(maxxvit.MbConvBlock(32, 64, cfg=cfg))
    assert f["cfg.act_layer"].value == "silu"


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


def test_the_best_of_a_few_better_steps_is_taken() -> None:
    mobilevit = pytest.importorskip("timm.models.mobilevit")
    # conv_1x1 is 128 -> 64: in_chs 64 scores better first, and is a step away; a ratio or a
    # width derived from in_chs moving instead is exact.
    block = mobilevit.MobileVitV2Block(128, 128, transformer_dim=64, patch_size=2)
    assert exact(block)["in_chs"].value == 128


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
