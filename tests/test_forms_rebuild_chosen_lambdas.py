"""A flag whose name the constructor reuses for the function it chose (``self.residual = lambda
x: 0`` under ``if not residual``): the attribute is no value of the flag
(``_forms/sources/attributes.py``), and two functions one constructor makes are told apart by
their code (``_forms/rebuild/parts.py``), so a wrong flag is never called exact; the zoo's
``tests/handwritten/styles8_r7b.py``."""

from __future__ import annotations

import pytest
import torch
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles8_r7b import GatedConv1d, GraphConvLayer, GraphStack
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_lambdas_of_one_constructor_differ_by_their_code() -> None:
    a, b = GraphConvLayer(4, self_loop=True), GraphConvLayer(4, self_loop=False)
    assert parts(a).items != parts(b).items
    assert parts(a).items == parts(GraphConvLayer(4)).items


@pytest.mark.parametrize("gated", [True, False])
def test_a_flag_is_read_as_a_flag_not_the_function_it_chose(gated: bool) -> None:
    assert _exact(GatedConv1d(4, 6, gated=gated))["gated"].value is gated


def test_keywords_spread_beside_an_explicit_flag_leave_it_out() -> None:
    m = GraphStack(8, 3, bias=False)
    assert _exact(m.layers[0])["self_loop"].value is False
    f = _exact(m)
    assert f["layer_kw"].value == {"bias": False} and f["depth"].value == 3
    assert isinstance(m.layers[0].lin, nn.Linear) and torch.is_tensor(m.layers[0].lin.bias)


@pytest.mark.parametrize("readout", ["sum", "max", "first"])
def test_a_name_looked_up_in_a_class_table_of_lambdas_is_read_by_its_code(readout: str) -> None:
    from tests.handwritten.styles8_r7b import SetReadout

    assert _exact(SetReadout(3, 8, readout=readout))["readout"].value == readout
