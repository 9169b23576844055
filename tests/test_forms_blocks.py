"""Blocks whose build needs a relation the earlier rules missed, each on a real library class
(random init, nothing downloaded): the form of a module built without recording is exact and its
unchanged build has the live parts.

- ``b = v + w``: a gate reads its input and its hidden state side by side (in = input + hidden);
- a per-item tuple whose items are one value, moved as one (anchors per feature map), also
  together with a width that multiplies it (out = anchors * classes);
- a factory read off one layer holds what that layer's call passed (stride=2): without it;
- a string converted to a string enum (``Format(fmt)``): the enum's values are its candidates;
- a layer's class where its registry name is annotated (``act_layer: str = 'gelu'``);
- a dict of keywords handed on to a layer: the layer's own keywords; ``b = W - W // v`` (the
  rest of a split); a string popped from a ``**kwargs`` dict: the strings compared there;
- a search with no wider one to follow looks past a no-better step however slow its builds.
"""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

from torchxray._forms.sources.literals import compared_strings

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


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


def test_a_string_converted_to_a_string_enum_takes_the_enums_values() -> None:
    pool = pytest.importorskip("timm.layers.adaptive_avgmax_pool")
    assert "NHWC" in compared_strings(pool.FastAdaptiveAvgPool, "input_fmt")
    f = exact(pool.FastAdaptiveAvgPool(flatten=True, input_fmt="NHWC"))
    assert f["input_fmt"].value == "NHWC"


def test_a_layer_class_where_a_registry_name_is_annotated() -> None:
    vitamin = pytest.importorskip("timm.models.vitamin")
    m = vitamin.GeGluMlp(64, 128, act_layer=nn.GELU)
    assert exact(m)["act_layer"].value is nn.GELU


def test_a_dict_of_keywords_handed_on_takes_the_layers_own_keywords() -> None:
    sk = pytest.importorskip("timm.models.sknet")
    block = sk.SelectiveKernelBasic(64, 64, sk_kwargs=dict(rd_ratio=1 / 8, rd_divisor=16))
    f = exact(block)
    assert f["sk_kwargs"].value  # the reduction width, however the dict names it


def test_the_rest_of_a_split_moves_with_its_divisor() -> None:
    fasternet = pytest.importorskip("timm.models.fasternet")
    f = exact(fasternet.Partial_conv3(40, 4, "split_cat"))
    assert (f["dim"].value, f["n_div"].value) == (40, 4)


def test_a_string_popped_from_a_kwargs_dict_takes_the_strings_compared_there() -> None:
    nest = pytest.importorskip("timm.models.nest")
    assert "same" in compared_strings(nest.ConvPool, "pad_type")
    f = exact(nest.ConvPool(64, 128, nn.LayerNorm, pad_type="same"))
    assert f["pad_type"].value == "same"


def test_a_search_with_no_wider_one_to_follow_looks_past_a_flat_step_however_slow_its_builds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A loaded machine makes every build slower: the look past a no-better proposal must not
    # depend on how much of the budget the builds before it took.
    densenet = pytest.importorskip("torchvision.models.densenet")
    import contextlib
    import time

    from torchxray._forms.candidates import loop

    real = loop.meta_build

    @contextlib.contextmanager
    def slow(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        end = time.thread_time() + 0.04
        while time.thread_time() < end:
            pass
        with real(*args, **kwargs) as state:  # type: ignore[arg-type]
            yield state

    monkeypatch.setattr(loop, "meta_build", slow)
    block = densenet._DenseBlock(6, 64, 4, 32, 0.0)
    f = exact(block)
    assert (f["num_input_features"].value, f["growth_rate"].value) == (64, 32)
