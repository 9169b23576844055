"""A rate handed on as its complement (``nn.Dropout(1 - keep)``, ``momentum=1.0 - decay``), read
back as ``c - live`` (``_forms/candidates/rules/complement.py``); the zoo's
``tests/handwritten/styles8_r7a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles8_r7a import FrameClassifier, PointEncoder
from torchxray._forms.candidates.rules.complement import complements

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_constants_are_read_through_a_helper_under_another_name() -> None:
    assert complements(FrameClassifier) == {"keep": (1.0,)}
    assert complements(PointEncoder) == {"ema_decay": (1.0,)}


def test_a_keep_probability_handed_to_a_dropout_is_read_back() -> None:
    f = _exact(FrameClassifier(20, 16, 7, keep=0.75))
    assert f["keep"].value == 0.75
    f = _exact(FrameClassifier(12, 8, 3, keep=0.9, depth=3))
    assert f["keep"].value == 0.9  # 1 - (1 - 0.9) is 0.9 again, its shortest decimal


def test_a_decay_handed_to_batch_norms_as_momentum_is_read_back() -> None:
    f = _exact(PointEncoder(3, (8, 12), ema_decay=0.99, emb=10))
    assert f["ema_decay"].value == 0.99
