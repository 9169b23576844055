"""Values of the wrong kind kept from the search (``_forms/sources/usage.py``, ``uses.py``,
``looked_up.py``, ``pools.py``): an argument a string method is called on is a string, not the
class a same-named attribute holds; a name changed in case before ``getattr`` is read back in
each spelling and flagged; a string no default gives is offered the strings it is compared
with; an argument takes the kind the user's layer it is handed to uses it as (followed
down a chain of them); one indexed by a constant is no class (the zoo's
``tests/handwritten/styles6_r5a.py``); a count named like a layer factory (``n_mp_layer``) used as
a number is a number; a ``**kwargs`` handed on through two blocks is read off the deepest; a
loop's count ``range(x - k)`` is offered the containers' lengths plus ``k``, flagged where one
below rebuilds alike (equal checks: ``test_forms_sources_asserted.py``; a value per part:
``test_forms_sources_per_key.py``)."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles6_r5a import (
    CasedTagger,
    CountedGraphNet,
    DilatedCounter,
    DownBlock1d,
    PointEncoder,
    RecurrentCore,
    RepeatStage,
    ResUnit2d,
    SpecClassifier,
    TokenMixer,
    UnitStage,
)
from torchxray._forms.sources.handed import handed
from torchxray._forms.sources.looked_up import looked_up, spellings
from torchxray._forms.sources.usage import fits, usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Cased(nn.Module):
    def __init__(self, d, cell="LSTM"):
        super().__init__()
        self.cell = getattr(nn, cell.upper())
        self.rnn = self.cell(d, d)


def test_a_string_method_makes_the_argument_a_string() -> None:
    u = usage(Cased, "cell")
    assert u.text
    assert not fits(u, nn.LSTM)  # what the same-named attribute holds
    assert fits(u, "lstm")
    assert not usage(Cased, "d").text


def test_a_name_changed_in_case_is_offered_in_each_spelling_and_flagged() -> None:
    m = Cased(4, cell="gru")
    assert looked_up(Cased, m, "cell") == ["gru", "Gru", "GRU"]
    assert spellings(Cased, m, "cell") == ["gru", "Gru", "GRU"]
    f = _exact(m)
    assert f["cell"].value.upper() == "GRU"
    assert f["cell"].note.startswith("a guess")  # "GRU" rebuilds it as exactly


def test_a_lower_cased_torch_function_and_a_called_class_are_read_back() -> None:
    f = _exact(PointEncoder(3, 8, reduce="AMAX"))
    assert f["reduce"].value.lower() == "amax" and f["reduce"].note.startswith("a guess")
    core = RecurrentCore(5, 6, "lstm")
    assert looked_up(RecurrentCore, core, "kind") == ["lstm", "Lstm", "LSTM"]
    _exact(core)


def test_a_case_changed_name_handed_to_a_block_is_flagged_in_the_parent_too() -> None:
    f = _exact(CasedTagger(30, 8, 10, 4, "gru"))
    assert f["kind"].value.upper() == "GRU"
    assert f["kind"].note.startswith("a guess")


def test_a_string_without_default_is_offered_what_it_is_compared_with() -> None:
    for choice in ("max", "avg"):
        f = _exact(DownBlock1d(2, 4, choice))
        assert f["pooling"].value == choice


def test_an_argument_takes_the_kind_of_the_layer_it_is_handed_to() -> None:
    u = usage(SpecClassifier, "widths")
    assert u.sequence and u.indexed  # iterated by SpecConvStack, indexed here
    assert not fits(u, 3)
    assert not fits(u, nn.Conv1d)  # indexed by a constant: no class
    assert fits(u, [4, 8])


def test_a_block_class_given_as_a_default_keeps_its_kernel_a_number() -> None:
    f = _exact(UnitStage(3, 4, 5, 2))
    assert f["kernel"].value == 5 and f["unit"].value is ResUnit2d


class Loop(nn.Module):
    """Hands its argument to itself one level down: read once, not forever."""

    def __init__(self, widths, depth=1):
        super().__init__()
        self.fc = nn.Linear(widths[0], widths[-1])
        self.inner = Loop(widths, depth - 1) if depth > 0 else None


def test_a_class_handing_an_argument_to_itself_is_read_once() -> None:
    u = usage(Loop, "widths")
    assert u.indexed


def test_a_count_named_like_a_layer_factory_is_a_number() -> None:
    f = _exact(DilatedCounter(2, 8, num_layer=4))
    assert f["num_layer"].kind != "class" and f["num_layer"].value == 4


def test_keywords_handed_on_through_two_blocks_are_read_off_the_deepest() -> None:
    m = CountedGraphNet(5, 12, n_mp_layer=2, edge_hidden=20)
    assert handed(CountedGraphNet, m, "block_kwargs", tx.form) == {"edge_hidden": 20}
    f = _exact(m)
    assert f["block_kwargs"].value == {"edge_hidden": 20} and f["n_mp_layer"].value == 2


def test_a_loop_count_is_offered_the_lengths_plus_its_offset() -> None:
    assert usage(RepeatStage, "reps").counts == (1,)
    assert usage(TokenMixer, "hops").counts == (2,)
    assert usage(TokenMixer, "width").counts == ()
    f = _exact(RepeatStage(3, 8, 3, 3))
    assert f["reps"].value == 3 and not f["reps"].note
    f = _exact(RepeatStage(3, 8, 1, 3))  # no layer made: 0 rebuilds it as exactly
    assert f["reps"].value == 1 and f["reps"].note.startswith("a guess")
