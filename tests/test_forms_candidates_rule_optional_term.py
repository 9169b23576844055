"""A width started at one argument, an optional one added where it was given, held by the
build in the first alone (``_forms/candidates/rules/optional_term.py``; the reading is
``_forms/sources/accumulated.py``); the zoo's ``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_r6a import GoalPolicy, SideFeatureClassifier

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_start_and_the_optional_term_move_together() -> None:
    f = _exact(GoalPolicy(11, 3, feat=16, goal_dim=4, hidden=24, n_blocks=3))
    assert (f["feat"].value, f["goal_dim"].value) == (16, 4)
    f = _exact(SideFeatureClassifier(30, emb_dim=12, n_side=5, hidden=10, n_cls=4))
    assert (f["emb_dim"].value, f["n_side"].value) == (12, 5)


def test_an_optional_term_left_out_stays_none() -> None:
    f = _exact(GoalPolicy(11, 3, feat=16, hidden=24, n_blocks=3))
    assert (f["feat"].value, f["goal_dim"].value) == (16, None)
