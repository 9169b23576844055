"""A form is a pure function of the module: the same on every call, in any order with the forms of
other modules, whatever an earlier form left behind (issue 40). Real timm classes, random init.

A second form of an efficientnet block once started from the values that rebuilt the first (a
table in a module global), less the factories they held, and ended with its required widths
empty: Form -> Apply then failed with "in_chs: required ...", in the widget and in Python.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from torch import nn

import torchxray as tx

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _seen(f: tx.Form) -> tuple[Any, ...]:
    # repr: a factory (functools.partial) has no ==; two equal factories print the same.
    fields = tuple((x.name, repr(x.value), x.origin, x.note) for x in f.fields)
    return fields, f.inexact


@pytest.fixture(scope="module")
def blocks() -> list[nn.Module]:
    timm = pytest.importorskip("timm")
    eff = timm.create_model("efficientnet_b0", pretrained=False)
    nxt = timm.create_model("convnext_atto", pretrained=False)
    return [eff.blocks[1][0], nxt.stages[1], eff.blocks[2][0], eff.blocks[0][0], nxt.stages[0]]


def test_two_forms_in_a_row_are_the_same(blocks: list[nn.Module]) -> None:
    for m in blocks:
        first, second = tx.form(m), tx.form(m)
        assert _seen(second) == _seen(first), type(m).__name__


def test_an_efficientnet_block_keeps_its_proven_widths(blocks: list[nn.Module]) -> None:
    for _ in range(2):
        f = tx.form(blocks[0])
        assert f.inexact == ""
        assert (f["in_chs"].value, f["out_chs"].value) == (16, 24)
        assert f["in_chs"].origin == f["out_chs"].origin == "inferred"


def test_forms_in_any_order_are_the_same(blocks: list[nn.Module]) -> None:
    forward = {id(m): _seen(tx.form(m)) for m in blocks}
    backward = {id(m): _seen(tx.form(m)) for m in reversed(blocks)}
    assert backward == forward


def test_an_edit_after_a_form_applies() -> None:
    timm = pytest.importorskip("timm")
    model = timm.create_model("efficientnet_b0", pretrained=False)
    tx.form(model.blocks[1][0])
    entry = tx.PatchLog(model).edit("blocks.1.0", exp_ratio=4.0)
    assert entry.changes["exp_ratio"] == (6.0, 4.0)
    assert model.blocks[1][0].conv_pw.out_channels == 64


def test_a_place_is_the_models_now_not_the_first_scans() -> None:
    from torchxray._forms.sources.position import ordinals

    block = nn.Linear(2, 2)
    assert ordinals(block) == [0, 1]  # nothing holds it yet
    stack = nn.Sequential(nn.Identity(), nn.Identity(), nn.Identity(), block)
    assert ordinals(block) == [3, 0, 1]
    stack[3] = nn.Identity()  # swapped out, as an edit does: the old module has no place now
    other = nn.ModuleList([nn.Identity(), nn.Identity(), block])
    assert ordinals(block) == [2, 0, 1]
    assert len(stack) == len(other) + 1


def test_a_value_the_gate_cannot_tell_apart_is_a_guess(blocks: list[nn.Module]) -> None:
    # A block of stride 2 has no skip whatever noskip says: True and False rebuild it the same.
    # The search once moved it to True ("inferred"); an edit to stride 1 would then drop the
    # skip timm's block has. It keeps its default (what timm passed), flagged as a guess.
    f = tx.form(blocks[0])
    assert f.inexact == ""
    field = f["noskip"]
    assert (field.value, field.origin) == (False, "default")
    assert field.note.startswith("a guess: True rebuilds it just as exactly")
    # What the gate proves stays proven: a stride of 1 would not rebuild it.
    assert (f["stride"].value, f["stride"].origin, f["stride"].note) == ((2, 2), "inferred", "")
    assert "noskip" in tx.PatchLog(nn.Sequential(blocks[0])).edit("0", exp_ratio=4.0).guessed
