"""The rule branch_layer (``_forms/candidates/rules/branch_layer.py``) and what it reads
(``_forms/sources/branches.py``): a layer made only under a flag, moved with the widths its call
was handed; and a ``**kwargs`` not read off a layer another call of its class made
(``_forms/sources/handed.py``). The models are the zoo's (``tests/handwritten/flagged_layers.py``)."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from handwritten.flagged_layers import FeatureMLP, SineField, StagedEncoder

import torchxray as tx
from torchxray._forms.candidates.rules import branch_layer, iterated
from torchxray._forms.candidates.rules.problem import Opening
from torchxray._forms.sources.handed import handed

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_flag_moves_with_the_live_layers_widths() -> None:
    live = dict(n_in=2, width=16, depth=1, n_out=4, linear_last=True)
    built = dict(n_in=2, width=16, depth=1, n_out=16, linear_last=False)
    got = proposed(branch_layer.propose, SineField, live, built)
    assert got == [{"linear_last": True, "n_out": 4}]
    assert isinstance(got[0], Opening)  # looked one step past (``loop.py``'s ``paired``)
    assert rebuilds(SineField, live, {**built, **got[0]})
    # A flag that already takes the live layer's branch is not moved.
    right = dict(built, linear_last=True)
    assert proposed(branch_layer.propose, SineField, live, right) == []


def test_a_flag_and_a_count_and_a_width_are_found_together() -> None:
    # Flipping linear_last alone builds a Linear of the wrong width, n_out alone the wrong class,
    # and the layer sits after ``depth`` blocks: no one field's move scores better.
    for a in [(2, 16, 1, 4), (1, 24, 4, 2)]:
        f = tx.form(SineField(*a, linear_last=True))
        assert f.inexact == ""
        got = {x.name: x.value for x in f.fields}
        assert got == dict(
            n_in=a[0], width=a[1], depth=a[2], n_out=a[3], linear_last=True, w0_first=30, w0=30.0
        )


def test_kwargs_are_not_read_off_a_layer_another_call_made() -> None:
    m = StagedEncoder(1, (4, 8, 12))
    # stages.0 is DownStage(c_in, w, downsample=False): its downsample is no keyword of
    # **stage_kwargs, which the other stages (made with them) show empty.
    assert handed(StagedEncoder, m, "stage_kwargs", tx.form) == {}
    f = tx.form(m)
    assert f.inexact == ""
    assert {x.name: x.value for x in f.fields}["stage_kwargs"] == {}


def test_a_list_of_widths_one_longer_than_its_layers_is_resized_by_their_count() -> None:
    # ``zip(widths[:-1], widths[1:])``: 3 items make 2 layers where the live module holds 3.
    live = dict(sizes=[3, 16, 16, 2])
    built = dict(sizes=[3, 16, 2])
    got = proposed(iterated.propose, FeatureMLP, live, built)
    assert {"sizes": [3, 16, 2, 3]} in got  # its own items repeated: the number rules move them


def test_a_dict_of_keywords_a_made_layer_took_is_no_none_and_a_flagged_guess() -> None:
    f = tx.form(FeatureMLP([3, 16, 16, 2], features={"scale": 3.0}))
    assert f.inexact == ""
    got = {x.name: x for x in f.fields}
    assert got["sizes"].value == [3, 16, 16, 2]
    # The layer shows every keyword at its default (scale only in its random values): which
    # were given is not known, so the field is a guess and says what rebuilds as exactly.
    assert got["features"].value == {}
    assert got["features"].origin == "default"
    assert "'scale': 1.0" in got["features"].note
