"""A called argument with no value (``_forms/sources/called.py``): the layer factory a model
hands down, the default the file's other constructors give that name, comes before the file's
functions named like it, on classes written here the way research code writes them (EDSR-style
``conv`` factories)."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

from torchxray._forms.sources.called import file_factories, handed_down

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def same_conv(in_ch, out_ch, k, bias=True):  # noqa: ANN001, ANN201
    return nn.Conv2d(in_ch, out_ch, k, padding=k // 2, bias=bias)


def conv_no_pad(in_ch, out_ch, k, bias=True):  # noqa: ANN001, ANN201
    return nn.Conv2d(in_ch, out_ch, k, bias=bias)


class Res(nn.Module):
    def __init__(self, conv, feats, k, act=None):  # noqa: ANN001
        super().__init__()
        self.body = nn.Sequential(conv(feats, feats, k), act or nn.ReLU(), conv(feats, feats, k))


class Up(nn.Sequential):
    def __init__(self, conv, feats, scale=2):  # noqa: ANN001
        super().__init__(conv(feats, feats * scale * scale, 3), nn.PixelShuffle(scale))


class Net(nn.Module):
    def __init__(self, feats=8, n_blocks=2, conv=same_conv):  # noqa: ANN001
        super().__init__()
        self.head = conv(3, feats, 3)
        self.body = nn.Sequential(*[Res(conv, feats, 3) for _ in range(n_blocks)])
        self.tail = Up(conv, feats)


def test_the_factory_the_model_hands_down_comes_first() -> None:
    assert handed_down(Res, "conv") == (same_conv,)  # Net's default
    assert file_factories(Res, "conv") == [same_conv, conv_no_pad]  # then those named like it
    assert handed_down(nn.Conv2d, "conv") == ()  # torch's own: its attributes say it all


def test_blocks_given_a_factory_get_exact_forms_with_it() -> None:
    net = Net()
    for block in (net.body[0], net.tail):
        f = exact(block)
        assert f["conv"].value is same_conv and f["feats"].value == 8


def test_a_block_made_with_the_other_factory_rebuilds_with_a_factory_that_makes_its_layers() -> (
    None
):
    f = exact(Res(conv_no_pad, 4, 3))  # nn.Conv2d itself makes them too: either is exact
    assert f["conv"].value in (conv_no_pad, nn.Conv2d) and f["k"].value == 3


def test_the_files_factory_is_shown_before_a_torch_class_that_makes_the_same_layers() -> None:
    f = exact(Res(same_conv, 4, 3))
    assert f["conv"].value is same_conv  # not partial(nn.Conv2d, padding=1): not what was written
