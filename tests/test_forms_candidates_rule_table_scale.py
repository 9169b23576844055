"""A float that scales widths no field holds (a table of the module's, a constant), each
rounded to a multiple (``_forms/candidates/rules/table_scale.py``); the zoo's
``tests/handwritten/styles7_r6a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6a import KeywordSpotter, ScaledTabularMLP
from torchxray._forms.candidates.rules import table_scale
from torchxray._forms.candidates.rules.problem import Problem
from torchxray._forms.field import make_field
from torchxray._forms.rebuild.compare import Difference
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_float_is_found_from_the_ratio_and_flagged() -> None:
    f = _exact(KeywordSpotter(6, alpha=0.5))
    assert f["alpha"].value == 0.5 and "a guess" in f["alpha"].note
    f = _exact(ScaledTabularMLP(9, 2, scale=0.125))
    assert f["scale"].value == 0.125 and "a guess" in f["scale"].note


def test_the_simplest_fraction_comes_first() -> None:
    import inspect

    p_alpha = inspect.signature(KeywordSpotter).parameters["alpha"]
    fld = make_field(KeywordSpotter, p_alpha, 1.0, "default")[0]
    d = Difference("body.0", "repr 1", "24", "32")  # live 24, built 32
    p = Problem(d, 0, [fld], {"alpha": 1.0}, uses={"alpha": usage(KeywordSpotter, "alpha")})
    assert list(table_scale.propose(p))[0] == {"alpha": 0.75}


class Handed(nn.Module):
    def __init__(self, d, mult=1.0):
        super().__init__()
        self.fc = nn.Linear(d, int(d * mult))
        self.act = nn.LeakyReLU(mult)  # handed to a layer: its own form says it


def test_a_float_handed_to_a_layer_is_left_to_other_rules() -> None:
    import inspect

    p_mult = inspect.signature(Handed).parameters["mult"]
    fld = make_field(Handed, p_mult, 1.0, "default")[0]
    d = Difference("fc", "repr 1", "8", "4")
    p = Problem(d, 0, [fld], {"mult": 1.0}, uses={"mult": usage(Handed, "mult")})
    assert list(table_scale.propose(p)) == []
