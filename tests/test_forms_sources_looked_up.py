"""A name ``__init__`` looks up with ``getattr`` on a module (``_forms/sources/looked_up.py``),
read back off what the lookup left on the module (the zoo's ``tests/handwritten/lookups.py``)."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.lookups import NamedActMLP
from torchxray._forms.sources.looked_up import looked_up

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_name_looked_up_on_a_module_is_read_back_off_what_it_found() -> None:
    m = NamedActMLP([12, 24, 4], act="silu", out_act="Tanh")
    assert looked_up(NamedActMLP, m, "act") == ["silu"]
    assert looked_up(NamedActMLP, m, "out_act") == ["Tanh"]  # getattr(nn, name)(): its class
    assert looked_up(NamedActMLP, m, "widths") == []
    f = _exact(m)
    assert (f["act"].value, f["out_act"].value) == ("silu", "Tanh")


class Looked(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fn = getattr(nn.functional, act)


def test_a_name_whose_lookup_is_not_what_the_module_keeps_is_not_offered() -> None:
    m = Looked("relu")
    m.fn = lambda x: x  # replaced after construction: no name of the owner's holds it
    assert looked_up(Looked, m, "act") == []
