"""A numpy array the constructor converts to a tensor itself, read as a numpy array made from the
tensor it keeps (``_forms/sources/arrays.py``); the zoo's ``tests/handwritten/styles8_r7a.py``."""

from __future__ import annotations

import numpy as np
import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles8_r7a import MelFrontEnd, RoadGraphConv, _mel_bank, _ring

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_bank_cast_with_astype_is_read_back_as_an_array() -> None:
    bank = _mel_bank(17, 6)
    f = _exact(MelFrontEnd(bank, 10, 4))
    got = f["fbank"].value
    assert isinstance(got, np.ndarray)
    assert np.allclose(got, bank.astype(np.float32))


def test_an_adjacency_handed_to_from_numpy_keeps_its_dtype() -> None:
    f = _exact(RoadGraphConv(_ring(7), 3, 8))
    got = f["adjacency"].value
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert np.array_equal(got, _ring(7))
