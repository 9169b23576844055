"""A number kept only through a step with a constant, or compared with whole numbers
(``_forms/sources/inverted.py``): the zoo's ``tests/handwritten/styles7_r6b.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_r6b import PrototypeHead, RankPool
from torchxray._forms.sources.inverted import compared_ints, inverted

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_number_kept_through_one_step_is_undone() -> None:
    m = PrototypeHead(12, 5, 0.25)
    assert inverted(PrototypeHead, m, "tau") == [0.25]
    assert inverted(RankPool, RankPool(2, 4, 1.25), "margin") == [1.25]
    assert inverted(PrototypeHead, m, "feat") == []
    assert _exact(m)["tau"].value == 0.25


def test_whole_numbers_an_argument_is_compared_with_choose_the_layer() -> None:
    assert compared_ints(RankPool, "rank") == (1, 2, 3)
    f = _exact(RankPool(3, 4, 1.25))
    assert (f["rank"].value, f["margin"].value) == (3, 1.25)
