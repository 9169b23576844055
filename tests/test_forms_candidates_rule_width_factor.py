"""The rule width_factor (``_forms/candidates/rules/width_factor.py``) alone, on a class written
here: an FT-Transformer-style feed-forward whose width is ``int(d_model * d_ffn_factor)``; then
the form, which recovers the float from the ratio of the widths."""

from __future__ import annotations

import math

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import width_factor
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_ffn_factor: float = 4 / 3, dropout: float = 0.1):
        super().__init__()
        d_ffn = int(d_model * d_ffn_factor)
        self.ffn_in = nn.Linear(d_model, d_ffn * 2)
        self.drop = nn.Dropout(dropout)
        self.ffn_out = nn.Linear(d_ffn, d_model)


def test_the_float_is_the_simplest_ratio_that_makes_the_live_width() -> None:
    live, built = dict(d_model=30, d_ffn_factor=1.7), dict(d_model=30, d_ffn_factor=4 / 3)
    got = proposed(width_factor.propose, FeedForward, live, built)
    assert {"d_ffn_factor": 1.7} in got  # 51 / 30 is 17 / 10
    assert rebuilds(FeedForward, live, {**built, "d_ffn_factor": 1.7})
    assert all("dropout" not in change for change in got)


def test_a_width_no_float_makes_proposes_nothing() -> None:
    class Plain(nn.Module):
        def __init__(self, d: int, hidden: int = 8, scale: float = 0.5):
            super().__init__()
            self.fc = nn.Linear(d, hidden)
            self.scale = scale

    # 8 is no whole part of 4 * 0.5 or 8 * 0.5: the float is not the width's.
    assert proposed(width_factor.propose, Plain, dict(d=4, hidden=12), dict(d=4)) == []


@pytest.mark.parametrize("factor", [1.7, 1.71, 2.0, 2.5])
def test_the_form_finds_a_factor_that_makes_the_width_and_flags_it_as_a_guess(
    factor: float,
) -> None:
    # Every factor in [51/30, 52/30) makes 51: the module shows the width, never the float, so
    # the value found (the simplest such fraction) is one of many and is flagged, never proven.
    live = FeedForward(30, factor)
    f = tx.form(live)
    assert f.inexact == ""
    assert int(30 * f["d_ffn_factor"].value) == int(30 * factor)
    assert f["d_ffn_factor"].note.startswith("a guess")
    assert not differences(parts(live), parts(f.build()))


def test_a_factor_the_module_keeps_is_proven_not_a_guess() -> None:
    class Kept(FeedForward):
        def __init__(self, d_model: int, d_ffn_factor: float = 4 / 3):
            super().__init__(d_model, d_ffn_factor)
            self.d_ffn_factor = d_ffn_factor

    f = tx.form(Kept(30, 1.7))
    assert f.inexact == ""
    assert f["d_ffn_factor"].value == 1.7 and f["d_ffn_factor"].note == ""


def test_a_float_field_that_is_infinite_proposes_nothing_and_raises_nothing() -> None:
    class Clipped(nn.Module):
        def __init__(self, d: int, factor: float = 2.0, clip: float = math.inf):
            super().__init__()
            self.fc = nn.Linear(d, int(d * factor))
            self.clip = clip

    built = dict(d=10, factor=2.0, clip=math.inf)
    got = proposed(width_factor.propose, Clipped, dict(d=10, factor=3.0), built)
    assert all("clip" not in change for change in got)
