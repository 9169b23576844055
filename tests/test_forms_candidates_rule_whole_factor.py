"""The rule whole_factor (``_forms/candidates/rules/whole_factor.py``) alone, on a class written
here: a RegNet-Y-style block whose optional squeeze width is ``int(round(w_in * se_ratio))``;
then the form, which finds the ratio rather than a smaller ``w_in``."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import whole_factor

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class _Squeeze(nn.Module):
    def __init__(self, c: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Conv2d(c, hidden, 1)
        self.fc2 = nn.Conv2d(hidden, c, 1)


class _Block(nn.Module):
    """A block whose optional squeeze width is a fraction of the input's (RegNet-Y style): the
    ratio is None by default, tested for truth, and shows only through that width."""

    def __init__(self, w_in, w_out, se_ratio=None):  # noqa: ANN001
        super().__init__()
        self.a = nn.Conv2d(w_in, w_out, 1)
        if se_ratio:
            self.se = _Squeeze(w_out, max(1, int(round(w_in * se_ratio))))
        self.c = nn.Conv2d(w_out, w_out, 1)


def test_a_ratio_tested_for_truth_is_found_a_fraction_not_a_smaller_width() -> None:
    f = tx.form(_Block(16, 24, se_ratio=0.25))
    assert not f.inexact, f.inexact
    assert f["w_in"].value == 16 and f["w_out"].value == 24
    assert f["se_ratio"].value == pytest.approx(0.25)  # not w_in 4 with a ratio of 1
    assert f["se_ratio"].note  # 0.25 and 0.2500x make the same width: a guess, said so


def test_a_whole_number_only_multiplied_is_proposed_the_fraction_of_the_live_width() -> None:
    live, built = dict(w_in=16, w_out=24, se_ratio=0.25), dict(w_in=16, w_out=24, se_ratio=1)
    got = proposed(whole_factor.propose, _Block, live, built)
    assert {"se_ratio": 0.25} in got
    assert all("w_in" not in change and "w_out" not in change for change in got)  # widths


def test_a_whole_ratio_is_left_to_the_number_rules() -> None:
    live, built = dict(w_in=16, w_out=24, se_ratio=2), dict(w_in=16, w_out=24, se_ratio=1)
    assert not proposed(whole_factor.propose, _Block, live, built)
