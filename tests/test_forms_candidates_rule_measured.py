"""The rule measured (``_forms/candidates/rules/measured.py``) alone, on a hand-written class of the
zoo: a DeepSpeech-style model that takes its labels only for their number."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

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
