"""The rule iterated (``_forms/candidates/rules/iterated.py``) alone, on a hand-written class of the
zoo: a DenseNet that adds one dense block per item of ``block_config``."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

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


class _Branches(nn.Module):
    """A fixed branch named as the first, one more per scale (``enumerate(scales, start=1)``)."""

    def __init__(self, dim=4, scales=(1, 2)):
        super().__init__()
        self.branch0 = nn.Linear(dim, dim)
        for i, s in enumerate(scales, start=1):
            setattr(self, f"branch{i}", nn.AvgPool1d(2 * s + 1, 1, s))


def test_a_sequence_a_stage_short_of_the_count_takes_the_live_count_less_one() -> None:
    live = dict(dim=4, scales=(1, 2, 3, 4))
    got = proposed(iterated.propose, _Branches, live, {**live, "scales": (1, 2)})
    assert {"scales": (1, 2, 1, 2)} in got  # five branches live, three built: two items more
    assert rebuilds(_Branches, live, {**live, "scales": (1, 2, 3, 4)})


def test_a_dicts_list_read_through_a_local_name_is_read_as_iterated() -> None:
    # PyramidNet: ``widths = cfg["widths"]``, a stage per pair after a stem named level0; the
    # list is no argument of its own (the leads read no use of a dict's member).
    import torchxray as tx
    from tests.handwritten import CASES

    f = tx.form(CASES["count_beside_length_dict"].build())
    assert f.inexact == ""
    assert list(f["cfg"].value["widths"]) == [4, 8, 12, 16]
