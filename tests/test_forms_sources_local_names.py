"""An argument read through a name of the constructor's own (``_forms/sources/local_names.py``):
a function defined inside ``__init__``, a local name then called (in a helper too, only where it
is called on every call), ``x or []``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.lookups import GoalPolicy, TwoHeads
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_function_defined_in_init_is_read_as_the_constructors_own_code() -> None:
    u = usage(TwoHeads, "mean_norm")
    assert u.table == ("none", "layer", "batch")
    assert usage(TwoHeads, "scale_norm").table == u.table  # handed by keyword
    f = _exact(TwoHeads(6, hidden=20, mean_norm="batch", scale_norm="none"))
    assert (f["mean_norm"].value, f["scale_norm"].value) == ("batch", "none")


def test_an_argument_called_under_a_local_name_in_a_helper_is_a_factory() -> None:
    assert usage(GoalPolicy, "act").called  # make = act if ... else last; make()
    f = _exact(GoalPolicy(12, 4, (40, 40), nn.SiLU))
    assert f["act"].value is nn.SiLU and list(f["hidden"].value) == [40, 40]


def default(val, d):  # type: ignore[no-untyped-def]
    return val if val is not None else (d() if callable(d) else d)


class Defaulted(nn.Module):
    def __init__(self, dim, inner=None):
        super().__init__()
        self.fc = nn.Linear(dim, default(inner, dim))


def test_a_helper_that_calls_its_parameter_only_where_callable_makes_no_factory() -> None:
    assert not usage(Defaulted, "dim").called  # an int is as good (lucidrains' ``default``)


class OrEmpty(nn.Module):
    def __init__(self, d, shared=None):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(d, d) for _ in shared or [])


def test_a_sequence_defaulted_with_or_empty_is_read_as_the_sequence() -> None:
    assert usage(OrEmpty, "shared").sequence
