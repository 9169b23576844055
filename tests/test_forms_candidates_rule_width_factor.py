"""The rule width_factor (``_forms/candidates/rules/width_factor.py``) alone, on a class written
here: an FT-Transformer-style feed-forward whose width is ``int(d_model * d_ffn_factor)``; then
the form, which recovers the float from the ratio of the widths."""

from __future__ import annotations

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


@pytest.mark.parametrize("factor", [1.7, 2.0, 4 / 3, 2.5])
def test_the_form_recovers_the_factor(factor: float) -> None:
    live = FeedForward(30, factor)
    f = tx.form(live)
    assert f.inexact == ""
    assert int(30 * f["d_ffn_factor"].value) == int(30 * factor)
    assert not differences(parts(live), parts(f.build()))
