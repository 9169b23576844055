"""The rule class_flag (``_forms/candidates/rules/class_flag.py``) alone, on classes written here:
a block whose activation's class a flag picks through a helper (V-Net's ``nn.ELU(inplace=True)
if elu else nn.PReLU(n)``), a head that is an Identity unless a flag is set; the flag read as a
truth by ``_forms/sources/usage.py`` (``Usage.condition``), and the forms that solve them."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import class_flag
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _act(elu, n):
    return nn.ELU(inplace=True) if elu else nn.PReLU(n)


class Block(nn.Module):
    def __init__(self, nchan, elu):
        super().__init__()
        self.relu1 = _act(elu, nchan)
        self.conv = nn.Conv1d(nchan, nchan, 3, padding=1)


class Head(nn.Module):
    def __init__(self, width, project=False):
        super().__init__()
        self.body = nn.Linear(width, width)
        self.proj = nn.Linear(width, width) if project else nn.Identity()


class Counted(nn.Module):
    def __init__(self, width, n):
        super().__init__()
        self.act = nn.ReLU() if n > 1 else nn.GELU()  # a number compared: no flag
        self.fc = nn.Linear(width, n)


def test_a_truth_test_here_or_in_a_helper_is_read_as_a_condition() -> None:
    assert usage(Block, "elu").condition
    assert usage(Head, "project").condition
    assert not usage(Block, "nchan").condition
    assert not usage(Counted, "n").condition


def test_the_flag_that_chose_the_class_is_flipped() -> None:
    live, built = dict(nchan=4, elu=False), dict(nchan=4, elu=True)
    got = proposed(class_flag.propose, Block, live, built)
    assert got[0] == {"elu": False}
    assert rebuilds(Block, live, {**built, **got[0]})
    # An unknown flag (None) is tried both ways.
    got = proposed(
        class_flag.propose, Head, dict(width=3, project=True), dict(width=3, project=None)
    )
    assert {"project": True} in got
    # A number compared is no flag: nothing proposed.
    assert proposed(class_flag.propose, Counted, dict(width=3, n=1), dict(width=3, n=2)) == []


@pytest.mark.parametrize(
    "make", [lambda: Block(4, False), lambda: Head(3, True)], ids=["prelu", "identity"]
)
def test_the_form_rebuilds_a_layer_a_flag_chose(make) -> None:  # type: ignore[no-untyped-def]
    live = make()
    f = tx.form(live)
    assert f.inexact == ""
    assert not differences(parts(live), parts(f.build()))


def test_a_number_taken_only_as_a_truth_is_shown_as_that_truth_and_flagged() -> None:
    # Any truthy number rebuilds the ELU block; the form shows True, naming the number it found.
    f = tx.form(Block(8, True))
    assert f.inexact == ""
    assert f["elu"].value is True
    assert f["elu"].note.startswith("a guess")


class Grouped(nn.Module):
    def __init__(self, chs, group_size=0):
        super().__init__()
        groups = chs // group_size if group_size else 1
        self.conv = nn.Conv2d(chs, chs, 3, groups=groups)


def test_a_one_that_is_also_a_truth_stays_a_number() -> None:
    # True and 1 are one number to arithmetic: group_size=1 rebuilds alike as True, and stays 1.
    f = tx.form(Grouped(8, 1))
    assert f.inexact == ""
    assert f["group_size"].value == 1 and type(f["group_size"].value) is int
