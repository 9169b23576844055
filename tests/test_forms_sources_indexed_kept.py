"""A list read only by constant indexes and its length, each reading kept under an attribute, put
back together (``_forms/sources/indexed_kept.py``); the zoo's ``tests/handwritten/styles8_r7a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles8_r7a import (
    DenoiseBranches,
    DilatedPairBlock,
    GRUTagger,
    PyramidHead,
    SensorRegressor,
    SpeakerMixer,
    TwoStepStem,
)
from torchxray._forms.sources.indexed_kept import indexed_kept

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_recurrent_stack_s_sizes_are_read_back_off_its_kept_readings() -> None:
    f = _exact(GRUTagger(30, 12, [20], 5))
    assert list(f["state_sizes"].value) == [20]
    f = _exact(SensorRegressor(4, (14,), horizon=3, nonlinearity="relu"))
    assert list(f["rnn_units"].value) == [14]


def test_both_ends_of_a_pair_cover_it() -> None:
    m = PyramidHead((16, 6), kernel=5)
    assert indexed_kept(PyramidHead, m, "chans", (1, 1)) == [(16, 6)]


class _Unread(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.first = sizes[0]
        self.n = len(sizes)
        self.lin = nn.Linear(self.first, self.n)


def test_an_item_nothing_reads_is_no_value_to_offer() -> None:
    m = _Unread([5, 7, 9])
    assert indexed_kept(_Unread, m, "sizes", None) == []  # sizes[1:] could be anything
    assert indexed_kept(_Unread, _Unread([5]), "sizes", None) == [[5]]


def test_items_handed_to_named_layers_as_keywords_are_read_back() -> None:
    f = _exact(SpeakerMixer(8, (5, 3), 4))
    assert list(f["kernels"].value) == [5, 3]
    m = TwoStepStem(3, 8, (2, 1))  # a conv keeps stride=2 as (2, 2)
    assert indexed_kept(TwoStepStem, m, "strides", None) == [[2, 1]]
    for m in (DenoiseBranches(3, [7, 3], mid=10), DilatedPairBlock(6, (2, 5), 3)):
        _exact(m)
