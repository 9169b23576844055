"""The rule kept_width (``_forms/candidates/rules/kept_width.py``) alone, on classes written here:
a grouped bottleneck whose inner width is a product of two arguments, and a recursive block whose
inner width is a sum of two; then the search, which reads it apart from the other rules, only where
it would otherwise stop (``_forms/candidates/loop.py``'s ``paired``)."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.guide import proposals
from torchxray._forms.candidates.rules import RULES, kept_width
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.signature import signature

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class GroupedBottleneck(nn.Module):
    """A ResNeXt-style block as a paper's code writes it: the 3x3's width is ``planes *
    width_per_group / 64 * cardinality``, and neither argument is kept."""

    def __init__(
        self, in_ch: int, planes: int, cardinality: int = 1, width_per_group: int = 64
    ) -> None:
        super().__init__()
        inner = planes * width_per_group // 64 * cardinality
        self.reduce = nn.Conv2d(in_ch, inner, 1, bias=False)
        self.norm = nn.BatchNorm2d(inner)
        self.grouped = nn.Conv2d(inner, inner, 3, padding=1, groups=cardinality, bias=False)
        self.expand = nn.Conv2d(inner, planes * 4, 1, bias=False)


class Unit(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)


class Pyramid(nn.Module):
    """A recursive block: each level is ``width + grow`` wide inside, ``width`` outside."""

    def __init__(self, levels: int, width: int, grow: int = 0) -> None:
        super().__init__()
        inner = width + grow
        self.keep = Unit(width, width)
        self.down = Unit(width, inner)
        self.mid = Pyramid(levels - 1, inner) if levels > 1 else Unit(inner, inner)
        self.up = Unit(inner, width)


class Stacked(nn.Module):
    """Pyramids stacked, each made in a list (no layer's form is read for its arguments)."""

    def __init__(self, channels: int, out: int, grow: int = 0, levels: int = 3) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), Unit(channels, channels))
        self.body = nn.ModuleList([Pyramid(levels, channels, grow) for _ in range(2)])
        self.heads = nn.ModuleList([nn.Conv2d(channels, out, 1) for _ in range(2)])


def test_a_named_item_moves_with_the_field_that_keeps_the_product() -> None:
    # The build has the 3x3's width right (16 * 16 // 64 * 1 = 4) and its groups wrong: groups
    # 2 alone makes the width 8; with width_per_group halved it stays 4.
    live = dict(in_ch=8, planes=16, cardinality=2, width_per_group=8)
    built = dict(in_ch=8, planes=16, cardinality=1, width_per_group=16)
    got = proposed(kept_width.propose, GroupedBottleneck, live, built)
    assert {"cardinality": 2, "width_per_group": 8} in got
    assert all(len(change) == 2 for change in got)
    assert not rebuilds(GroupedBottleneck, live, {**built, "cardinality": 2})
    assert rebuilds(GroupedBottleneck, live, {**built, "cardinality": 2, "width_per_group": 8})


def test_a_number_moves_with_the_field_that_keeps_the_sum() -> None:
    # The build is 12 wide outside and inside (grow 0); the live one 8 outside, 8 + 4 inside.
    live = dict(channels=8, out=4, grow=4, levels=2)
    built = dict(channels=12, out=4, grow=0, levels=2)
    got = proposed(kept_width.propose, Stacked, live, built)
    assert {"channels": 8, "grow": 4} in got
    assert not rebuilds(Stacked, live, {**built, "channels": 8})
    assert rebuilds(Stacked, live, {**built, "channels": 8, "grow": 4})


def test_moves_of_two_fields_are_read_apart_from_the_moves_of_one() -> None:
    assert [r.scope for r in RULES if r.name.startswith("kept_")] == ["last", "last"]
    live, wrong = Stacked(8, 4, grow=4, levels=2), Stacked(12, 4, grow=0, levels=2)
    diffs = differences(parts(live), parts(wrong))
    fields = [f for f in tx.form(live).fields if not f.group]
    values = {"channels": 12, "out": 4, "grow": 0, "levels": 2}
    sig = signature(Stacked)
    first = list(proposals(diffs, fields, values, live, sig, {}))
    last = list(proposals(diffs, fields, values, live, sig, {}, last=True))
    assert {"channels": 8} in first and {"channels": 8, "grow": 4} not in first
    assert {"channels": 8, "grow": 4} in last
    assert all(len(change) == 2 for change in last)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda: GroupedBottleneck(8, 16, cardinality=2, width_per_group=8),
            {"cardinality": 2, "width_per_group": 8},
        ),
        (lambda: Stacked(8, 4, grow=4, levels=2), {"channels": 8, "grow": 4}),
    ],
    ids=["product", "sum"],
)
def test_the_form_finds_both_fields_and_rebuilds_the_module(make, expected) -> None:  # type: ignore[no-untyped-def]
    live = make()
    f = tx.form(live)
    assert f.inexact == ""
    assert {k: f[k].value for k in expected} == expected
    assert not differences(parts(live), parts(f.build()))
