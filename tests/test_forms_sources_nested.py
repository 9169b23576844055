"""Config arguments searched field by field (``_forms/sources/nested.py``) and the candidates that serve
them, each on a real library class built from a config (random init, nothing downloaded): the
form of a module built without recording is exact, and its unchanged build has the live parts."""

from __future__ import annotations

import dataclasses
import importlib
import warnings

import pytest
from fixtures.forms import exact
from torch import nn

import torchxray as tx
from torchxray._forms.sources.literals import compared_strings

warnings.filterwarnings("ignore")


pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class _Mode(nn.Module):
    def __init__(self, mode: str = "plain") -> None:
        super().__init__()
        self.act = nn.GELU() if mode == "smooth" else nn.ReLU()


def test_the_strings_a_source_file_compares_a_name_with_are_candidates() -> None:
    assert compared_strings(_Mode, "mode") == ("smooth",)
    assert exact(_Mode("smooth"))["mode"].value == "smooth"


def test_a_required_config_object_is_searched_field_by_field() -> None:
    # InvertedResidual(cnf, norm_layer) keeps neither: the config's fields come from the layers
    # (widths, kernel, stride), its activation from the strings the file compares it with ("HS").
    tv = pytest.importorskip("torchvision")
    model = tv.models.mobilenet_v3_small()
    for block in (model.features[1], model.features[4]):
        f = exact(block)
        cnf = f["cnf"].value
        assert isinstance(cnf, tv.models.mobilenetv3.InvertedResidualConfig)
        assert cnf.out_channels == block.out_channels
    assert f["cnf.use_hs"].value is True  # the config's own fields are the form's sub-fields


def test_config_dataclasses_with_a_ratio_and_a_layer_factory() -> None:
    # MBConvConfig / FusedMBConvConfig are dataclasses made from an expand ratio (1.0 tried first
    # for a required ratio: the block without an expansion) and widths; norm_layer is the class
    # of a layer without children (BatchNorm2d, not the conv-norm block around it).
    tv = pytest.importorskip("torchvision")
    for block in (
        tv.models.efficientnet_b0().features[1][0],
        tv.models.efficientnet_v2_s().features[1][0],
        tv.models.efficientnet_v2_s().features[2][0],
    ):
        f = exact(block)
        assert dataclasses.is_dataclass(f["cnf"].value)
    assert f["cnf"].value.expand_ratio == 4.0


def test_a_dataclass_default_is_searched_field_by_field() -> None:
    # PartitionAttentionCl's cfg defaults to a MaxxVitTransformerCfg; the live one was given
    # another (rel_pos_type="mlp", read from a comparison elsewhere in the file; a window size).
    timm = pytest.importorskip("timm")
    model = timm.create_model("maxvit_rmlp_pico_rw_256", pretrained=False)
    f = exact(model.stages[0].blocks[0].attn_block)
    assert f["cfg"].value.rel_pos_type == "mlp"
    assert f["cfg"].value.window_size == (8, 8)


def test_a_required_float_starts_at_one_and_a_factory_at_a_leaf_layer() -> None:
    tv = pytest.importorskip("torchvision")
    block = tv.models.regnet_y_400mf().trunk_output.block1[0]
    f = exact(block)
    assert f["bottleneck_multiplier"].value == 1.0
    assert f["norm_layer"].value is nn.BatchNorm2d


def test_the_names_a_failed_build_quotes_are_tried_for_a_string() -> None:
    # AutoencoderTinyBlock(in, out, act_fn) keeps no act_fn; a build with "" fails with "not
    # found in ACT2FN mapping ['swish', 'silu', ...]": those names are the candidates.
    diffusers = pytest.importorskip("diffusers")
    model = diffusers.AutoencoderTiny(
        encoder_block_out_channels=(8, 8),
        decoder_block_out_channels=(8, 8),
        num_encoder_blocks=(1, 1),
        num_decoder_blocks=(1, 1),
        latent_channels=4,
    )
    assert exact(model.encoder.layers[1])["act_fn"].value == "relu"


def test_unannotated_widths_are_numbers_and_a_kernel_size_is_read_from_a_buffer() -> None:
    # open_clip's Bottleneck(inplanes, planes, stride) has no annotations: a width's name is a
    # number first, not a per-stage tuple; timm's Dct1d keeps its kernel size only as the side
    # of its eye() buffer.
    open_clip = pytest.importorskip("open_clip")
    pytest.importorskip("timm")
    resnet = open_clip.modified_resnet.ModifiedResNet((1, 1, 1, 1), 64, 2, 64, 16)
    f = exact(resnet.layer2[0])
    assert (f["inplanes"].value, f["planes"].value) == (64, 32)
    csatv2 = importlib.import_module("timm.models.csatv2")  # timm.models.csatv2 is a function
    dct = csatv2.Dct1d(kernel_size=8)
    assert exact(dct)["kernel_size"].value == 8


def test_a_spread_kwargs_holds_what_the_layer_it_reaches_holds() -> None:
    # BasicConv2d(in_channels, out_channels, **kwargs) hands kwargs on to
    # nn.Conv2d(in_channels, out_channels, bias=False, **kwargs): the conv's kernel size, stride
    # and padding, less the two it is given by position and the bias it is given by name.
    tv = pytest.importorskip("torchvision")
    f = exact(tv.models.googlenet(init_weights=False, aux_logits=False).conv1)
    assert f["kwargs"].value == {"kernel_size": (7, 7), "stride": (2, 2), "padding": (3, 3)}


def test_a_class_without_a_source_file_opens_its_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class whose module has no file (IPython's ``__main__`` in a kernel): the strings its
    code compares are unknown, and the form opens all the same."""
    import sys
    import types

    mod = types.ModuleType("torchxray_test_fileless")
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    def init(self: nn.Module, tag: str = "wide", width: int = 8) -> None:
        nn.Module.__init__(self)
        self.lin = nn.Linear(width, width)

    cls = type("Fileless", (nn.Module,), {"__init__": init, "__module__": mod.__name__})
    assert compared_strings(cls, "tag") == ()
    form = tx.form(cls(width=4))
    assert form.values["width"] == 4


# A namespace read field by field (``cfg.kernel``, ``args.model.dropout``), as research code passes
# its parsed options: nothing annotates it, the module keeps it nowhere.
class _Trunk(nn.Module):
    def __init__(self, opt):  # type: ignore[no-untyped-def]
        super().__init__()
        widths = [opt.in_ch, *opt.widths]
        self.convs = nn.Sequential(
            *[
                nn.Sequential(nn.Conv1d(a, b, opt.k, padding=opt.k // 2), nn.GroupNorm(opt.g, b))
                for a, b in zip(widths[:-1], widths[1:])
            ]
        )


class _Net(nn.Module):
    def __init__(self, opt):  # type: ignore[no-untyped-def]
        super().__init__()
        self.trunk = _Trunk(opt.net.trunk)
        self.drop = nn.Dropout(opt.net.p)
        self.fc = nn.Linear(opt.net.trunk.widths[-1], opt.data.classes)


def _opt() -> object:
    from types import SimpleNamespace as NS

    trunk = NS(in_ch=3, widths=[8, 12], k=5, g=4)
    return NS(net=NS(trunk=trunk, p=0.25), data=NS(classes=7))


def test_a_namespace_read_field_by_field_is_searched_field_by_field() -> None:
    from torchxray._forms.sources.usage import usage

    # What is read off a field: cfg.net.trunk is read for widths, and handed to _Trunk whole.
    u = usage(_Net, "opt", ("net", "trunk"))
    assert u.fields == ("widths",) and u.handed[0].callee is _Trunk
    f = exact(_Trunk(_opt().net.trunk))  # type: ignore[attr-defined]
    assert vars(f["opt"].value) == {"in_ch": 3, "widths": [8, 12], "k": 5, "g": 4}


def test_a_nested_namespace_handed_on_to_a_users_class() -> None:
    f = exact(_Net(_opt()))
    opt = f["opt"].value
    assert (opt.net.p, opt.data.classes) == (0.25, 7)
    assert (opt.net.trunk.in_ch, opt.net.trunk.widths, opt.net.trunk.k) == (3, [8, 12], 5)


def test_a_config_handed_to_a_block_that_annotates_it_is_searched_member_by_member() -> None:
    # ``Gate(d, cfg)`` annotates ``cfg: GateConfig``; ``GatedLayer(d, cfg)`` annotates nothing.
    from tests.handwritten import CASES

    f = tx.form(CASES["config_handed_annotated"].build()[0])
    assert not f.inexact
    assert (f["cfg"].value.width, f["cfg"].value.gated) == (6, False)


def test_the_config_class_a_block_annotates_is_the_one_handed_to_it() -> None:
    from tests.handwritten.dictconfigs import GateConfig, GatedLayer, MemoryStack
    from torchxray._forms.sources.nested import _handed_config

    assert _handed_config(GatedLayer, "cfg") is GateConfig
    assert _handed_config(GatedLayer, "d") is None  # an int handed to a layer
    assert _handed_config(MemoryStack, "opts") is None  # a dict read by keys: no class
