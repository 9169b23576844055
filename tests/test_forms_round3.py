"""Blocks whose build needs a rule the earlier rounds missed, each on a real library class (random
init, nothing downloaded): the form of a module built without recording is exact and its
unchanged build has the live parts.

- a ``**kwargs`` handed on through a factory a parameter holds (``block_fn(..., **block_kwargs)``
  in a loop): the keywords of the blocks it filled a container with, and the keys the constructor
  reads from that dict itself (``block_kwargs.get('norm_layer')``) even at their defaults;
- a count named ``x_per_y`` (``block_per_stage``, ``layer_per_block``) is a depth;
- a class the constructor reads an attribute of (``block_type.expansion``) that a tried class
  lacks: the classes of the module's layers that have it;
- a layer kept under a parameter's name whose default is plain (``downsample=('', 1)``) is not
  the argument: the search starts from the default;
- ``b = 2 * w * r`` (a fused gate doubles an mlp's hidden width): ``r`` becomes ``r * live / b``,
  a ratio in thirds (``4 * 2 / 3``);
- a value added as a layer that is none: the layers handed in may sit in a container the
  constructor made of them (``nn.Sequential(*[norm, activation])``);
- a numbered layer only the build has (``convgru2``): the sequence fields shortened together to
  the live count; one pair per layer (``kernel_size=((1, 5), ...)``) moved item by item;
- widths per item that chain (each layer reads its predecessor's): every width once, in order;
- a tuple holding the built number several times: each one of them moved alone too;
- a numbered layer the live module holds as Identity (made only when its width is given) counts
  as one only the build has; each sequence field shortened alone too.
"""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_keywords_handed_through_a_block_factory_read_off_the_blocks_it_made() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("darknet17", pretrained=False).stages[0]
    f = exact(stage)
    kw = f["block_kwargs"].value
    assert kw["norm_layer"] is not None and kw["act_layer"] is not None


def test_a_count_per_stage_or_per_block_is_a_depth() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("ese_vovnet19b_dw", pretrained=False).stages[0]
    f = exact(stage)
    assert (f["block_per_stage"].value, f["layer_per_block"].value) == (1, 3)


def test_a_class_without_the_attribute_the_constructor_reads_tries_the_layers_classes() -> None:
    timm = pytest.importorskip("timm")
    from timm.models.resnet import BasicBlock

    module = timm.create_model("hrnet_w18_small", pretrained=False).stage2[0]
    f = exact(module)
    assert f["block_types"].value is BasicBlock


def test_a_layer_made_from_a_plain_default_is_not_the_argument() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("efficientvit_m0", pretrained=False).stages[0]
    f = exact(stage)
    assert f["downsample"].value == ("", 1)


def test_a_fused_gate_hidden_width_moves_its_ratio_in_thirds() -> None:
    timm = pytest.importorskip("timm")
    block = timm.create_model("eva02_tiny_patch14_224", pretrained=False).blocks[0]
    f = exact(block)
    assert f["mlp_ratio"].value == pytest.approx(4 * 2 / 3)


def test_a_layer_handed_in_is_found_in_the_container_made_of_it() -> None:
    mvit = pytest.importorskip("torchvision.models.video.mvit")
    from torch import nn

    pool = mvit.Pool(nn.Conv3d(8, 8, 3, padding=1, groups=8, bias=False), nn.LayerNorm(8))
    f = exact(pool)
    assert isinstance(f["norm"].value, nn.LayerNorm)


def test_a_numbered_layer_only_the_build_has_shortens_the_per_layer_pairs() -> None:
    raft = pytest.importorskip("torchvision.models.optical_flow.raft")
    block = raft.RecurrentBlock(input_size=146, hidden_size=96, kernel_size=(3,), padding=(1,))
    f = exact(block)
    assert len(f["kernel_size"].value) == len(f["padding"].value) == 1


def test_widths_that_chain_through_a_container_are_read_in_order() -> None:
    hgnet = pytest.importorskip("timm.models.hgnet")
    f = exact(hgnet.StemV1([3, 16, 16, 32]))
    assert list(f["stem_chs"].value) == [3, 16, 16, 32]


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
