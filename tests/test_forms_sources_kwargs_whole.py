"""A ``**kwargs`` handed on whole, as one dict, to a block's parameter (``Block(d, h, kwargs)``,
the block spreading it further), read off that block's form (``_forms/sources/kwargs_whole.py``);
the zoo's ``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles7_r6a import PointGraphNet, StagedDecoder

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_kwargs_dict_handed_to_blocks_is_read_off_their_form() -> None:
    f = _exact(PointGraphNet(3, 12, 2, 4, k=3, aggr_hidden=10))
    assert f["conv_opts"].value == {"k": 3, "aggr_hidden": 10}
    f = _exact(StagedDecoder(8, (12, 6), kernel_size=4, stride=2, padding=1))
    kw = f["up_kwargs"].value
    assert (kw["kernel_size"], kw["stride"], kw["padding"]) == ((4, 4), (2, 2), (1, 1))


class Unpacked(nn.Module):
    def __init__(self, d, **kw):
        super().__init__()
        self.fc = nn.Linear(d, kw.get("out", 4))  # read by a key, never handed whole


def test_a_kwargs_never_handed_whole_is_not_read_so() -> None:
    f = tx.form(Unpacked(3, out=5))
    assert f.inexact != "" or f["kw"].value == {"out": 5}
