"""An argument used as the key of a dict its class's module defines (``configs[net_size]``):
the dict's keys are its candidates (``_forms/sources/code.py``'s ``global_table``, read by
``usage.py``); the zoo's ``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles7_r6a import DepthKeyedResNet1d, RateKeyedFrontend
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_module_table_gives_its_keys() -> None:
    assert usage(DepthKeyedResNet1d, "depth").table == (10, 14, 18)
    assert usage(RateKeyedFrontend, "sample_rate").table == (8000, 16000, 22050)


def test_the_key_is_found_by_rebuilding() -> None:
    f = _exact(DepthKeyedResNet1d(14, 3))
    assert f["depth"].value == 14
    f = _exact(RateKeyedFrontend(8000, 12, 7))
    assert (f["sample_rate"].value, f["d_model"].value) == (8000, 12)


TWINS = {1: (4, 1), 2: (4, 1), 3: (8, 2)}  # two keys of one entry


class Twinned(nn.Module):
    def __init__(self, level):
        super().__init__()
        width, n = TWINS[level]
        self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(n)])


def test_keys_of_equal_entries_are_not_told_apart() -> None:
    assert usage(Twinned, "level").table == ()
    # Never "exact" with a key another rebuilds alike.
    f = tx.form(Twinned(2))
    assert f.inexact != "" or f["level"].value == 2 or f["level"].note


class Shadowed(nn.Module):
    def __init__(self, level):
        super().__init__()
        TWINS = {5: 3}  # noqa: N806 - a local table of the same name
        self.fc = nn.Linear(TWINS[level], 2)


def test_a_local_name_is_no_module_table() -> None:
    assert usage(Shadowed, "level").table == (5,)
