"""A width started at one argument that an optional one is added to only where it was given
(``_forms/sources/accumulated.py``, ``_forms/candidates/rules/optional_term.py``); the zoo's
``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6a import GoalPolicy, SideFeatureClassifier
from torchxray._forms.sources.accumulated import Accumulated, accumulated

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_width_and_its_optional_term_are_read() -> None:
    assert accumulated(SideFeatureClassifier) == (Accumulated("rnn_in", "emb_dim", "n_side"),)
    # Through a local name for the argument, the addition written ``w = w + x``.
    assert accumulated(GoalPolicy) == (Accumulated("trunk_in", "feat", "goal_dim"),)


def test_the_start_and_the_optional_term_move_together() -> None:
    f = _exact(GoalPolicy(11, 3, feat=16, goal_dim=4, hidden=24, n_blocks=3))
    assert (f["feat"].value, f["goal_dim"].value) == (16, 4)
    f = _exact(SideFeatureClassifier(30, emb_dim=12, n_side=5, hidden=10, n_cls=4))
    assert (f["emb_dim"].value, f["n_side"].value) == (12, 5)


def test_an_optional_term_left_out_stays_none() -> None:
    f = _exact(GoalPolicy(11, 3, feat=16, hidden=24, n_blocks=3))
    assert (f["feat"].value, f["goal_dim"].value) == (16, None)


class Else(nn.Module):
    def __init__(self, a, b=None):
        super().__init__()
        w = a
        if b is not None:
            w += b
        else:
            w += 1  # not only the optional term: no reading
        self.fc = nn.Linear(w, 2)


class Twice(nn.Module):
    def __init__(self, a, b=None):
        super().__init__()
        w = a
        w = 2 * a  # started twice: no single start
        if b is not None:
            w += b
        self.fc = nn.Linear(w, 2)


def test_other_shapes_are_not_read() -> None:
    assert accumulated(Else) == ()
    assert accumulated(Twice) == ()
