"""The rule iterated (``_forms/candidates/rules/iterated.py``) alone, on a hand-written class of the
zoo: a DenseNet that adds one dense block per item of ``block_config``."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import iterated

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_sequence_iterated_once_per_stage_takes_the_live_count_of_stages() -> None:
    from tests.handwritten.classifiers import DenseNet

    live = dict(growth_rate=6, block_config=(2, 3), num_init_features=8, drop_rate=0.1)
    built = {**live, "block_config": (2, 2, 2)}
    got = proposed(iterated.propose, DenseNet, live, built)
    assert {"block_config": (2, 2)} in got
    assert rebuilds(DenseNet, live, {**built, "block_config": (2, 3)})
    # Of the right length, a number rule then moves its items: nothing more here.
    assert not proposed(iterated.propose, DenseNet, live, {**live, "block_config": (2, 2)})
