"""A whole model's arguments read from the function it is named after (``_forms/sources/factory.py``,
issue 40 item 4): timm builds EfficientNet from block lists decoded from arch strings and RegNet
from a cfg dataclass taken from a table, and keeps neither; its ``efficientnet_b0()`` is named in
the model's ``pretrained_cfg``. Real timm models, random init, nothing downloaded."""

from __future__ import annotations

import os
import sys
import sysconfig
import types
import warnings
from typing import Any

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.signature import signature
from torchxray._forms.sources.factory import factories, named_factory_args

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _timm(name: str, **kwargs: object) -> Any:
    timm = pytest.importorskip("timm")
    return timm.create_model(name, pretrained=False, **kwargs)


def test_the_block_lists_are_read_from_the_function_the_model_is_named_after() -> None:
    m = _timm("efficientnet_b0")
    args = named_factory_args(m, type(m), signature(type(m)), float("inf"))
    blocks = args["block_args"]
    # One list per stage, one dict of the block's keywords per block, as decode_arch_def made it.
    assert len(blocks) == 7 and [len(s) for s in blocks] == [1, 2, 2, 3, 3, 4, 1]
    assert blocks[1][0]["block_type"] == "ir" and blocks[1][0]["out_chs"] == 24


def test_a_model_built_from_block_lists_rebuilds_exactly_and_edits() -> None:
    m = _timm("efficientnet_b0", num_classes=10)
    f = tx.form(m)
    assert f.inexact == ""
    assert f["block_args"].origin == "inferred" and f["num_classes"].value == 10
    assert f["act_layer"].value is nn.SiLU  # what the function passed, proven by the gate
    built: Any = f.build(num_classes=5)
    assert built.classifier.out_features == 5
    assert [len(s) for s in built.blocks] == [len(s) for s in m.blocks]


def test_an_attribute_the_function_passes_another_value_for_is_searched() -> None:
    # MobileNetV3 keeps the last block's width as num_features and is given the head's width.
    m = _timm("mobilenetv3_small_050")
    f = tx.form(m)
    assert f.inexact == ""
    assert f["num_features"].value == 1024 and m.num_features != 1024


def test_a_cfg_dataclass_from_a_table_rebuilds_exactly_and_twice_the_same() -> None:
    m = _timm("regnetx_002")
    first, second = tx.form(m), tx.form(m)
    assert first.inexact == "" and first["cfg"].origin == "inferred"
    assert [(x.name, x.text, x.origin) for x in first.fields] == [
        (x.name, x.text, x.origin) for x in second.fields
    ]


@pytest.mark.parametrize(
    ("name", "given"),
    [
        # ``-> Levit`` for a LevitDistilled: a base of the class; ``LevitDistilled(*args,
        # **kwargs)`` takes everything as keywords, given whole.
        ("levit_128s", "kwargs"),
        # No return annotation: ``fastvit_t8`` calls ``_create_fastvit``, which names FastVit.
        ("fastvit_t8", "layers"),
    ],
)
def test_a_function_that_makes_the_class_another_way_is_read_too(name: str, given: str) -> None:
    f = tx.form(_timm(name))
    assert f.inexact == "" and f[given].origin == "inferred"


_ZOO = """
from torch import nn

built = []


class Net(nn.Module):
    def __init__(self, widths):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.pretrained_cfg = {"architecture": "tiny_net"}
        built.append(1)


def tiny_net() -> Net:
    return Net([4, 8, 2])
"""


def _zoo(where: str | None = None) -> tuple[types.ModuleType, type]:
    """A module that defines a class and a function named after a model of it, as a library
    installed in this interpreter's site-packages has, or at `where`."""
    home = types.ModuleType("h2_zoo")
    home.__file__ = where or os.path.join(sysconfig.get_paths()["purelib"], "h2_zoo.py")
    exec(compile(_ZOO, home.__file__, "exec"), vars(home))  # noqa: S102 - the test's own text
    return home, home.Net  # type: ignore[attr-defined]


def test_only_a_function_of_the_class_s_module_that_returns_it_is_called() -> None:
    home, net = _zoo()
    sys.modules[home.__name__] = home
    try:
        m = home.tiny_net()
        assert factories(m, net) == [home.tiny_net]
        args = named_factory_args(m, net, signature(net), float("inf"))
        assert args == {"widths": [4, 8, 2]}
        # The call stopped at the constructor's first layer: only the live model was built.
        assert len(home.built) == 1
        home.tiny_net.__annotations__["return"] = int  # says it makes something else
        assert factories(m, net) == []
        del home.tiny_net.__annotations__["return"]  # says nothing, and its code names Net
        assert factories(m, net) == [home.tiny_net]
        home.Net = None  # its code names nothing of the class's module that is the class
        assert factories(m, net) == []
    finally:
        del sys.modules[home.__name__]


def test_the_person_s_own_function_is_never_run(tmp_path: Any) -> None:
    # A notebook's or a script's function may load data or write files before it makes the
    # model: only installed libraries' factories are called.
    home, net = _zoo(str(tmp_path / "h2_zoo.py"))
    sys.modules[home.__name__] = home
    try:
        m = home.tiny_net()
        assert factories(m, net) == []
        assert named_factory_args(m, net, signature(net), float("inf")) == {}
        assert len(home.built) == 1  # the function was not called again
    finally:
        del sys.modules[home.__name__]


def test_a_model_no_function_is_named_after_stays_refused_by_name() -> None:
    timm = pytest.importorskip("timm")
    from timm.models._efficientnet_builder import decode_arch_def

    blocks = decode_arch_def([["ds_r1_k3_s1_e1_c16"], ["ir_r2_k3_s2_e6_c24"]])
    m = timm.models.efficientnet.EfficientNet(blocks, num_features=64, stem_size=8)
    f = tx.form(m)
    assert f.inexact != "" and f["block_args"].value is None


def test_a_profiler_that_runs_is_left_alone() -> None:
    m = _timm("efficientnet_b0")

    def profiler(frame: object, event: str, arg: object) -> None:
        pass

    sys.setprofile(profiler)
    try:
        assert named_factory_args(m, type(m), signature(type(m)), float("inf")) == {}
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
