"""Where a constructor puts what it was given, read by stage 2 (``_forms/sources/``) and the gate's
parts (``_forms/rebuild/parts.py``): a layer kept under another name (``self.net = net_``), a
layer handed to a container at its place, a factory that holds what comes before the width, a
class the annotation names, a ParameterDict's order, and a repr that names a device. Each class
is written here in the habits of code nobody here wrote; each form is then exact."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import pytest
import torch
from fixtures.forms import exact
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.passed import kept
from torchxray._forms.sources.usage import usage

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class EdgeConv(nn.Module):
    # PEP 8's trailing underscore (the argument would shadow the module ``nn``): kept as self.nn.
    def __init__(self, nn_: nn.Module, aggr: str = "max") -> None:
        super().__init__()
        self.nn = nn_
        self.aggr = aggr

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.nn(x)


def test_a_layer_kept_under_another_name_is_the_argument() -> None:
    inner = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
    conv = EdgeConv(inner, aggr="mean")
    # nn.Module.__setattr__ keeps a layer in _modules, not __dict__: it is read there.
    assert kept(conv, usage(EdgeConv, "nn_")) == [inner]
    f = exact(conv)
    assert f["nn_"].value is inner and f["aggr"].value == "mean"


class Siamese(nn.Module):
    def __init__(self, backbone: nn.Module, width: int = 8) -> None:
        super().__init__()
        self.branch = nn.Sequential(backbone, nn.Linear(width, 4))
        self.frozen = copy.deepcopy(self.branch)


def test_a_layer_handed_to_a_container_is_read_at_its_place() -> None:
    encoder = nn.Sequential(nn.Linear(3, 8), nn.Tanh())
    m = Siamese(encoder)
    (h,) = usage(Siamese, "backbone").handed
    assert (h.callee, h.kept, h.index) == (nn.Sequential, "branch", 0)
    assert kept(m, usage(Siamese, "backbone")) == [encoder]
    # The argument itself leads, though annotated (a whole network gathered from the layers,
    # or the container, would come first otherwise).
    assert exact(m)["backbone"].value is encoder


class Block(nn.Module):
    expansion = 1

    def __init__(self, width: int, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self.conv = nn.Conv2d(width, width, 3, padding=1)
        self.norm = norm_layer(width)


class Stack(nn.Module):
    # ``unit`` names no class; six kinds of leaf layer come before the blocks.
    def __init__(self, unit: type[Block], depth: int = 2, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
            nn.Dropout(0.1), nn.Identity(),
        )  # fmt: skip
        self.head = nn.Linear(width * unit.expansion, 4)
        self.blocks = self._make(unit, depth, width)

    def _make(self, unit: type[Block], depth: int, width: int) -> nn.Sequential:
        return nn.Sequential(*[unit(width) for _ in range(depth)])


def test_a_factory_that_holds_what_comes_before_the_width() -> None:
    # GroupNorm(num_groups, num_channels): the width is passed last; partial(GroupNorm, 4) holds
    # the groups by place.
    f = exact(Block(8, norm_layer=lambda c: nn.GroupNorm(4, c)))
    assert f["norm_layer"].value(8).num_groups == 4


def test_a_class_the_annotation_names_is_tried_first() -> None:
    f = exact(Stack(Block, depth=3, width=8))
    assert (f["unit"].value, f["depth"].value) == (Block, 3)


def test_a_parameterdicts_order_is_kept() -> None:
    # ParameterDict sorts a plain dict's keys: the form hands it an OrderedDict.
    params = nn.ParameterDict()
    for name in ("w2", "w1", "b"):
        params[name] = nn.Parameter(torch.zeros(2))
    f = exact(params)
    assert list(f["parameters"].value) == ["w2", "w1", "b"]


def test_a_repr_names_no_device() -> None:
    # ParameterDict prints each tensor's legacy type, which names the device
    # ("torch.meta.FloatTensor"): a rebuild on meta is the same module.
    m = nn.ParameterDict({"w": nn.Parameter(torch.zeros(2, 3))})
    on_meta = nn.ParameterDict({"w": nn.Parameter(torch.zeros(2, 3, device="meta"))})
    assert "meta" in repr(on_meta)
    assert parts(on_meta).items == parts(m).items
    assert tx.form(m).inexact == ""
