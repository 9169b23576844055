"""The source ``_forms/sources/running.py`` alone: a list of sizes the module keeps only as its
running sums (an offsets buffer, ``np.cumsum(field_dims)``) and one table for all of them
(``nn.Embedding(sum(field_dims), d)``); an arange is no such list; and the form it makes exact."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.sources.running import running

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Fields(nn.Module):
    def __init__(self, field_dims, d):
        super().__init__()
        self.table = nn.Embedding(sum(field_dims), d)
        offsets = [0]
        for n in field_dims[:-1]:
            offsets.append(offsets[-1] + n)
        self.register_buffer("offsets", torch.tensor(offsets))


class Positions(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.pos = nn.Embedding(n, d)
        self.register_buffer("ids", torch.arange(n))


def test_the_sizes_are_the_steps_and_what_a_table_has_beyond_them() -> None:
    assert running(Fields([5, 7, 3], 4))[0] == [5, 7, 3]
    assert running(Positions(6, 4)) == []  # position ids: steps of one, no sizes
    assert running(nn.Linear(3, 4)) == []


def test_the_form_of_a_module_keeping_running_sums_is_exact() -> None:
    live = Fields([5, 7, 3], 4)
    f = tx.form(live)
    assert f.inexact == ""
    assert f["field_dims"].value == [5, 7, 3]
