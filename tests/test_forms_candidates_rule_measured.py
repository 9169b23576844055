"""The rule measured (``_forms/candidates/rules/measured.py``) alone, on a hand-written class of the
zoo: a DeepSpeech-style model that takes its labels only for their number."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import measured

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_sequence_measured_with_len_takes_the_live_length() -> None:
    from tests.handwritten.scans import DeepSpeech

    live = dict(rnn_type=__import__("torch").nn.GRU, labels="_'abcdefg", rnn_hidden_size=16,
                nb_layers=2, audio_conf={"sample_rate": 800, "window_size": 0.02})  # fmt: skip
    built = {**live, "labels": "abc"}
    got = proposed(measured.propose, DeepSpeech, live, built)
    assert {"labels": "abcabcabc"} in got
    assert rebuilds(DeepSpeech, live, {**built, "labels": "abcabcabc"})


def test_resized_keeps_the_type_and_repeats_the_items() -> None:
    assert measured.resized((1, 2), 5) == (1, 2, 1, 2, 1)
    assert measured.resized(["a"], 2) == ["a", "a"] and measured.resized("abcd", 2) == "ab"


def test_the_form_is_exact_and_says_only_the_length_is_known() -> None:
    import torchxray as tx
    from tests.handwritten import CASES

    f = tx.form(CASES["deepspeech_rnn_class"].build())
    assert f.inexact == ""
    labels = f["labels"]
    assert len(labels.value) == 9 and labels.origin == "default"  # a guess, flagged
    assert "rebuilds it just as exactly" in labels.note


class _TrueEmpty(tuple):  # a sequence type that is true with no items (as some config types are)
    def __bool__(self) -> bool:
        return True


def test_a_value_true_with_no_items_is_proposed_nothing() -> None:
    class Head(nn.Module):
        def __init__(self, labels, width=4):
            super().__init__()
            self.fc = nn.Linear(width, len(labels))

    got = proposed(measured.propose, Head, {"labels": ("a", "b")}, {"labels": _TrueEmpty()})
    assert got == []


def test_a_rule_that_fails_ends_its_own_proposals_not_the_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchxray._forms.candidates import guide

    def broken(p: object):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("a rule's own bug")
        yield {}

    runs = [(scope, [broken, *run]) for scope, run in guide._RUNS]
    monkeypatch.setattr(guide, "_RUNS", runs)

    class Block(nn.Module):  # searched: no attribute keeps ``ratio``
        def __init__(self, dim, ratio=2.0):
            super().__init__()
            self.fc1 = nn.Linear(dim, int(dim * ratio))
            self.fc2 = nn.Linear(int(dim * ratio), dim)

    f = tx.form(Block(6, ratio=3.0))
    assert not f.inexact and [x.value for x in f.fields] == [6, 3.0]


class _Stages(nn.Module):
    """A count kept one above the length: the stem is counted as a stage."""

    def __init__(self, dims=(8, 16), width=4):
        super().__init__()
        self.stem = nn.Linear(width, dims[0])
        self.stages = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.num_stages = len(dims) + 1


def test_a_count_kept_beside_the_length_moves_the_length_as_much() -> None:
    live = dict(dims=(8, 16, 24, 32), width=4)
    got = proposed(measured.propose, _Stages, live, {**live, "dims": (8, 16)})
    assert {"dims": (8, 16, 8, 16)} in got  # num_stages 5 live, 3 built: two items more
    assert rebuilds(_Stages, live, {**live, "dims": (8, 16, 24, 32)})
