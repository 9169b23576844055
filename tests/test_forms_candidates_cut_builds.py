"""A class whose defaults are a large model (a ViT-L's depth 24 of width 1024) built small: every
try at its defaults is cut for its size (``_forms/candidates/loop.py``). Such a cut made more than
the live module has, so another value's failure after fewer parts is no step (``patch=0``
dividing by zero at the first layer was taken for one, and every later try divided by it too);
while builds are cut, the loops' counts are tried first; a division by the zero just tried
(``failed.blames``) is never a step. The zoo's ``tests/handwritten/styles7_lead.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_lead import SpectrogramMaskedAE
from torchxray._forms.candidates.failed import blames

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_large_models_defaults_cut_for_size_do_not_lead_the_search_to_a_zero() -> None:
    m = SpectrogramMaskedAE(
        n_mels=16, n_frames=32, patch=8, dim=32, depth=2, heads=4, dec_dim=16, dec_depth=1,
        dec_heads=2,
    )  # fmt: skip
    f = _exact(m)
    got = {k: f[k].value for k in ("patch", "dim", "depth", "heads", "dec_dim", "dec_depth")}
    assert got == {"patch": 8, "dim": 32, "depth": 2, "heads": 4, "dec_dim": 16, "dec_depth": 1}
    # Only their product of patches is built: each size alone is a flagged guess.
    assert f["n_mels"].note.startswith("a guess") and f["n_frames"].note.startswith("a guess")


def test_a_division_by_the_zero_tried_is_blamed_on_it() -> None:
    assert blames("ZeroDivisionError: integer division or modulo by zero", 0)
    assert not blames("ZeroDivisionError: integer division or modulo by zero", 4)
    assert not blames("TypeError: 'int' object is not subscriptable", 0)
