"""Keywords gathered in a local dict and spread into calls (``_forms/sources/keyword_dicts.py``), and
a name by its default kept as the function it names (``_forms/sources/attributes.py``): the
zoo's ``tests/handwritten/styles7_r6b.py``."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles7_r6b import (
    GatedPool,
    RowEncoder,
    SpeechDenoiser,
    TabularTower,
    TemporalBlock,
    WaveField,
)
from torchxray._forms.sources.code import code_of
from torchxray._forms.sources.keyword_dicts import spread
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_field_in_a_dict_call_reaches_each_call_it_is_spread_into() -> None:
    u = usage(TabularTower, "opt", ("squash",))
    assert {(h.callee, h.param, h.kept) for h in u.handed} == {
        (RowEncoder, "squash", "first"),
        (RowEncoder, "squash", "second"),
    }


def test_a_field_in_a_dict_literal_reaches_the_blocks_it_is_spread_into() -> None:
    u = usage(SpeechDenoiser, "hp", ("nonlin",))
    assert {(h.callee, h.param, h.kept) for h in u.handed} == {(TemporalBlock, "nonlin", "blocks")}


class _Changed(nn.Module):
    def __init__(self, act):
        super().__init__()
        kw = {"squash": act}
        kw["use_bias"] = False  # changed in place: the spread dict is not followed
        self.enc = RowEncoder(3, 4, **kw)


class _Overridden(nn.Module):
    def __init__(self, act):
        super().__init__()
        kw = dict(squash=act)
        self.a = RowEncoder(3, 4, **kw)
        self.b = RowEncoder(4, 4, **{"use_bias": False}, squash="none")


def _load(cls: type, name: str) -> tuple[ast.AST, ast.AST, object]:
    code = code_of(cls.__init__)
    assert code is not None
    node = code.loads[name][0]
    return node, code.up[node], code


def test_a_dict_changed_in_place_is_not_followed() -> None:
    node, parent, code = _load(_Changed, "act")
    assert spread(node, parent, code) == []  # type: ignore[arg-type]
    assert not usage(_Changed, "act").handed


def test_only_the_calls_the_dict_is_spread_into_are_read() -> None:
    node, parent, code = _load(_Overridden, "act")
    got = spread(node, parent, code)  # type: ignore[arg-type]
    assert [(ast.unparse(c.func), k) for c, k in got] == [("RowEncoder", "squash")]


def test_namespace_fields_spread_into_blocks_are_exact() -> None:
    f = _exact(SpeechDenoiser(SimpleNamespace(channels=6, norm_kind="group", nonlin="gelu")))
    assert (f["hp.norm_kind"].value, f["hp.nonlin"].value) == ("group", "gelu")
    f = _exact(TabularTower(SimpleNamespace(features=9, hidden=14, squash="softsign", bias=False)))
    assert (f["opt.squash"].value, f["opt.bias"].value) == ("softsign", False)


def test_a_name_kept_as_the_function_it_names_is_searched_as_a_name() -> None:
    # self.wave = pick_wave(wave) holds torch.cos: the argument was "cosine", not the function
    assert _exact(WaveField(3, 24, 2, wave="cosine"))["wave"].value == "cosine"
    assert _exact(WaveField(3, 24, 2, wave="silu"))["wave"].value == "silu"
    assert _exact(GatedPool(10, gate="hard"))["gate"].value == "hard"


_TWO_NAMES = {"sigmoid": torch.sigmoid, "logistic": torch.sigmoid, "hard": F.hardsigmoid}


class _Aliased(nn.Module):
    def __init__(self, feat, gate="hard"):
        super().__init__()
        self.score = nn.Linear(feat, 1)
        self.gate = _TWO_NAMES[gate]


def test_two_names_of_one_function_are_flagged_not_proven() -> None:
    f = tx.form(_Aliased(4, "logistic"))
    assert f.inexact == ""
    assert f["gate"].value in ("sigmoid", "logistic")
    assert f["gate"].note.startswith("a guess")
    assert not tx.form(_Aliased(4, "hard"))["gate"].note  # no other name rebuilds it
