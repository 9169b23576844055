"""A keyword a block hands to a layer of its own whose class takes it through ``**kwargs``
(``MoELayer(d, act=act)`` into ``**expert_kw``) is read off that layer's form, in its
``**kwargs`` (``_forms/sources/code.py: bound(into_kwargs=True)``, ``passed.py: _spread``; the zoo's
``tests/handwritten/styles7_lead.py``)."""

from __future__ import annotations

import ast

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_lead import MessageEncoder, MessageLayer, SpecEncoder, UnitStage
from torchxray._forms.sources.code import bound

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_bound_names_a_keyword_that_kwargs_collects_only_when_asked() -> None:
    call = ast.parse("UnitStage(c, w, 2, norm=norm)").body[0].value  # type: ignore[attr-defined]
    assert bound(call, "norm", UnitStage) is None
    assert bound(call, "norm", UnitStage, into_kwargs=True) == ("norm", -1)
    assert bound(call, "c", UnitStage, into_kwargs=True) == ("c_in", -1)


def test_keywords_through_a_stages_unit_kwargs_are_read() -> None:
    f = _exact(SpecEncoder(12, 16, 5, norm="instance", dropout=0.25))
    assert f["norm"].value == "instance" and f["dropout"].value == 0.25
    assert _exact(UnitStage(12, 16, 2, norm="instance", p=0.25))["unit_kw"].value == {
        "norm": "instance",
        "p": 0.25,
    }


def test_an_activation_name_through_a_layers_mlp_kwargs_is_read() -> None:
    f = _exact(MessageEncoder(8, 12, layers=2, act="tanh"))
    assert f["act"].value == "tanh" and f["hidden"].value == 12
    assert _exact(MessageLayer(8, hidden=12, act="tanh"))["mlp_kw"].value == {
        "hidden": 12,
        "act": "tanh",
    }
