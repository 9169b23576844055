"""The rule floored (``_forms/candidates/rules/floored.py``) alone, on a hand-written class of the
zoo: a signal classifier whose flattened width is what a strided conv leaves of the length."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import floored

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_argument_inside_floor_divisions_is_solved_for_by_evaluating_them() -> None:
    from tests.handwritten.styles6_r5b import SignalClassifier

    live = dict(length=64, channels=4, kernel=5, stride=3, classes=3)
    built = {**live, "length": 1000}
    got = proposed(floored.propose, SignalClassifier, live, built)
    # (length - 5) // 3 + 1 == 20: 62, 63 and 64 make it; the nearest to 1000 first.
    lengths = [c["length"] for c in got if "length" in c]
    assert lengths[:2] == [64, 63]  # (once per number of the difference: weight, repr)
    assert rebuilds(SignalClassifier, live, {**built, "length": 64})


def test_the_form_is_exact_and_flags_the_neighbour_that_rebuilds_alike() -> None:
    import torchxray as tx
    from tests.handwritten import CASES

    f = tx.form(CASES["floored_signal_width"].build())
    assert f.inexact == ""
    length = f["length"]
    assert length.value in (62, 63, 64) and "rebuilds it just as exactly" in length.note
