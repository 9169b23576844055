"""How ``__init__`` uses an argument it hands to a helper method of its own class
(``_forms/sources/helpers.py``, read by ``usage.py`` and ``literals.py``)."""

from __future__ import annotations

import torch
from torch import nn

import torchxray as tx
from torchxray._forms.sources.literals import compared_strings
from torchxray._forms.sources.usage import Handed, usage


class Block(nn.Module):
    def __init__(self, dim, pad, norm, use_drop, bias):
        super().__init__()
        self.body = self.build(dim, pad, norm, use_drop, bias)

    def build(self, dim, pad, norm, use_drop, bias):
        pads = {"reflect": nn.ReflectionPad2d, "replicate": nn.ReplicationPad2d}
        out = []
        p = 0
        if pad in pads:
            out.append(pads[pad](1))
        elif pad == "zero":
            p = 1
        out += [nn.Conv2d(dim, dim, 3, padding=p, bias=bias), norm(dim)]
        if use_drop:
            out.append(nn.Dropout(0.5))
        return nn.Sequential(*out)

    def forward(self, x):
        return x + self.body(x)


class Factories(nn.Module):
    def __init__(self, width, n_out, hidden):
        super().__init__()
        self.stem = type(self).stem_of(width)
        self.head = self._head(hidden, n_out)
        self.mid = self.__class__.mid_of(self, width, hidden)

    @classmethod
    def stem_of(cls, w):
        return nn.Conv2d(3, w, 3)

    @staticmethod
    def _head(h, n):
        return nn.Linear(h, n)

    def mid_of(self, w, h):
        return nn.Linear(w, h)


class PerItem(nn.Module):
    def __init__(self, feat, sizes):
        super().__init__()
        self.heads = nn.ModuleList()
        for n in sizes:
            self.add(feat, n)

    def add(self, feat, n):
        self.heads.append(nn.Linear(feat, n))


def test_a_helper_methods_uses_are_the_constructors() -> None:
    conv = nn.Conv2d
    assert usage(Block, "dim").handed == (
        Handed(conv, "in_channels", "body"),
        Handed(conv, "out_channels", "body"),
    )
    pad = usage(Block, "pad")
    assert pad.table == ("reflect", "replicate")
    assert pad.table_values == (nn.ReflectionPad2d, nn.ReplicationPad2d)
    assert usage(Block, "norm").called
    assert usage(Block, "use_drop").condition
    assert usage(Block, "bias").handed == (Handed(conv, "bias", "body"),)
    # a local dict it is looked up in, and the string it is compared with
    assert compared_strings(Block, "pad") == ("reflect", "replicate", "zero")


def test_static_class_and_type_self_methods_are_read_with_their_own_parameters() -> None:
    assert usage(Factories, "width").handed == (
        Handed(nn.Conv2d, "out_channels", "stem"),
        Handed(nn.Linear, "in_features", "mid"),
    )
    assert usage(Factories, "n_out").handed == (Handed(nn.Linear, "out_features", "head"),)


def test_an_item_handed_to_a_method_in_a_loop_is_read_back_off_its_layers() -> None:
    u = usage(PerItem, "sizes")
    assert u.items_handed == (Handed(nn.Linear, "out_features", "heads"),)
    f = tx.form(PerItem(5, [3, 1, 4]))
    assert not f.inexact and f.values == {"feat": 5, "sizes": [3, 1, 4]}


def test_a_block_built_by_a_method_gets_an_exact_form() -> None:
    norm = nn.BatchNorm2d
    for pad in ("reflect", "zero"):
        f = tx.form(Block(6, pad, norm, False, True))
        assert not f.inexact, f.inexact
        values = f.values
        assert (values["dim"], values["pad"], values["norm"]) == (6, pad, norm)
        assert values["bias"] is True
        x = torch.randn(1, 6, 5, 5)
        assert f.build(pad="replicate")(x).shape == x.shape
