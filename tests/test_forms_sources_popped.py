"""Keys a constructor pops out of its ``**kwargs`` with a default and hands to a layer, read off
that layer's form (``_forms/sources/popped.py``); the zoo's ``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles7_r6a import PoppedDenoiser, PoppedTwoTower

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_popped_keys_are_read_off_their_layers() -> None:
    f = _exact(PoppedTwoTower(15, 25, item_hidden=20, out_dim=6, dropout=0.1))
    assert f["cfg"].value == {"item_hidden": 20, "out_dim": 6, "dropout": 0.1}
    # Through a local name, beside the rest handed on to another layer.
    f = _exact(PoppedDenoiser(16, enc_dim=12, enc_layers=3, squash=False))
    assert f["opts"].value == {"enc_dim": 12, "enc_layers": 3, "squash": False}


def test_a_popped_key_at_its_default_is_left_out() -> None:
    f = _exact(PoppedDenoiser(16, enc_layers=3))
    assert f["opts"].value == {"enc_layers": 3}


class Computed(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.fc = nn.Linear(4, kw.pop("width", 8) * 2)  # not handed as it was popped


def test_a_popped_value_changed_before_it_is_handed_is_not_read() -> None:
    f = tx.form(Computed(width=3))
    assert f.inexact != "" or f["kw"].value == {"width": 3}
