"""The rule linear_sum (``_forms/candidates/rules/linear_sum.py``) alone, on classes written here:
a Bahdanau-style attention whose Linear takes ``enc_hid * 2 + dec_hid`` and a decoder whose GRU
takes a local ``enc_hid * 2 + emb`` (the sums read off the AST: ``tests/test_forms_sources_sums.py``);
and the form that solves them."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import linear_sum
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Attention(nn.Module):
    def __init__(self, enc_hid, dec_hid):
        super().__init__()
        self.attn = nn.Linear((enc_hid * 2) + dec_hid, dec_hid)
        self.v = nn.Linear(dec_hid, 1, bias=False)


class Decoder(nn.Module):
    def __init__(self, out_dim, emb, enc_hid, dec_hid):
        super().__init__()
        self.embedding = nn.Embedding(out_dim, emb)
        joined = enc_hid * 2 + emb
        self.rnn = nn.GRU(joined, dec_hid)
        self.fc_out = nn.Sequential(nn.Linear(joined + dec_hid, out_dim))


class Product(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.fc = nn.Linear(a * b, 4)  # a product of two arguments: no linear form


def test_the_argument_wrong_in_a_sum_is_solved_for() -> None:
    live, built = dict(enc_hid=12, dec_hid=10), dict(enc_hid=8, dec_hid=10)
    got = proposed(linear_sum.propose, Attention, live, built)
    # enc_hid first: dec_hid's 10 is shown unchanged as the Linear's out_features.
    assert got[0] == {"enc_hid": 12}
    assert rebuilds(Attention, live, {**built, **got[0]})

    # A layer no sum is handed to (``v`` takes ``dec_hid`` itself): nothing to solve there.
    def at_v(p):  # type: ignore[no-untyped-def]
        return linear_sum.propose(p) if p.diff.path == "v" else iter(())

    assert (
        proposed(at_v, Attention, dict(enc_hid=12, dec_hid=10), dict(enc_hid=12, dec_hid=8)) == []
    )


@pytest.mark.parametrize(
    "make",
    [lambda: Attention(12, 10), lambda: Decoder(25, 6, 12, 10)],
    ids=["attention", "decoder"],
)
def test_the_form_rebuilds_a_module_whose_widths_are_sums(make) -> None:  # type: ignore[no-untyped-def]
    live = make()
    f = tx.form(live)
    assert f.inexact == ""
    assert f["enc_hid"].value == 12
    assert not differences(parts(live), parts(f.build()))


class SumOnly(nn.Module):
    def __init__(self, enc_hid, dec_hid):
        super().__init__()
        self.attn = nn.Linear(enc_hid * 2 + dec_hid, 5)  # the two are seen only as this sum


def test_two_arguments_seen_only_as_their_sum_are_flagged_as_guesses() -> None:
    # 2 * 7 + 7 = 21 = 2 * 8 + 5 = 2 * 6 + 9: any split rebuilds it, none is proven.
    f = tx.form(SumOnly(7, 7))
    assert f.inexact == ""
    assert 2 * f["enc_hid"].value + f["dec_hid"].value == 21
    assert f["enc_hid"].note.startswith("a guess") and f["dec_hid"].note.startswith("a guess")


def test_a_sum_one_of_whose_arguments_a_layer_shows_is_proven() -> None:
    f = tx.form(Attention(12, 10))  # v = Linear(dec_hid, 1) shows dec_hid
    assert (f["enc_hid"].value, f["dec_hid"].value) == (12, 10)
    assert f["enc_hid"].note == "" and f["dec_hid"].note == ""


def test_a_sum_the_others_overshoot_is_solved_with_them_at_one_and_flagged() -> None:
    from tests.handwritten.lookups import GoalCritic

    live, built = dict(state_dim=9, goal_dim=3), dict(state_dim=40, goal_dim=40)
    got = proposed(linear_sum.propose, GoalCritic, live, built)
    assert {"state_dim": 11, "goal_dim": 1} in got and {"state_dim": 1, "goal_dim": 11} in got
    f = tx.form(GoalCritic(9, 3, hidden=(24, 24)))
    assert f.inexact == ""
    assert f["state_dim"].value + f["goal_dim"].value == 12
    assert f["state_dim"].note.startswith("a guess") and f["goal_dim"].note.startswith("a guess")
