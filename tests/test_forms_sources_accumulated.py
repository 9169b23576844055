"""A width started at one argument that an optional one is added to only where it was given
(``_forms/sources/accumulated.py``: ``w = a; if b is not None: w += b``); the rule that moves
both is ``tests/test_forms_candidates_rule_optional_term.py``. The zoo's
``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

from torch import nn

from tests.handwritten.styles7_r6a import GoalPolicy, SideFeatureClassifier
from torchxray._forms.sources.accumulated import Accumulated, accumulated


def test_the_width_and_its_optional_term_are_read() -> None:
    assert accumulated(SideFeatureClassifier) == (Accumulated("rnn_in", "emb_dim", "n_side"),)
    # Through a local name for the argument, the addition written ``w = w + x``.
    assert accumulated(GoalPolicy) == (Accumulated("trunk_in", "feat", "goal_dim"),)


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
