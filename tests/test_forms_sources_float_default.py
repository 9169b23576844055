"""An argument whose default says int but which takes floats is a float field
(``_forms/sources/handed_kind.py``, ``takes_floats``): ``dropout=0`` handed on to ``nn.Dropout``
(its ``p: float``), a value given as 0.5 where the default is 0, and one handed to a user's
layer whose parameter is annotated float or defaults to a float. One handed to an int parameter,
or counted with, stays int and refuses 1.5 (blind7's ST-GCN refused an edit of ``dropout=0.0``)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchxray as tx

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Gate(nn.Module):
    def __init__(self, d, rate: float = 0.25):
        super().__init__()
        self.rate = rate
        self.fc = nn.Linear(d, d)


class Scaled(nn.Module):
    def __init__(self, d, scale=1.0):
        super().__init__()
        self.scale = scale
        self.fc = nn.Linear(d, d)


class Block(nn.Module):
    def __init__(self, c, stride=1, dropout=0, gate=0, scale=1, depth=2):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, stride, 1)
        self.drop = nn.Dropout(dropout)
        self.gate = Gate(c, rate=gate)
        self.scaled = Scaled(c, scale=scale)
        self.body = nn.Sequential(*[nn.Identity() for _ in range(depth)])


def _kinds(m: nn.Module) -> dict[str, str]:
    return {f.name: f.kind for f in tx.form(m).fields}


def test_a_whole_number_default_handed_on_to_a_float_parameter_is_a_float_field() -> None:
    kinds = _kinds(Block(4))
    assert kinds["dropout"] == kinds["gate"] == kinds["scale"] == "float"
    assert kinds["stride"] == kinds["depth"] == "int"  # handed to an int, or counted with


def test_a_float_given_where_the_default_is_a_whole_number_is_a_float_field() -> None:
    class Given(nn.Module):
        def __init__(self, d, p=0):
            super().__init__()
            self.p = p
            self.fc = nn.Linear(d, d)

    f = tx.form(Given(4, p=0.5))
    field = next(x for x in f.fields if x.name == "p")
    assert (field.kind, field.value) == ("float", 0.5)


def test_the_float_field_takes_an_edit_and_the_int_field_refuses_one() -> None:
    torch.manual_seed(0)
    f = tx.form(Block(4, dropout=0.5))
    assert f.validate(dropout=0.0, gate=0.1) == {}
    built = f.build(dropout=0.0, gate=0.1)
    assert built.drop.p == 0.0 and built.gate.rate == 0.1
    assert "stride" in f.validate(stride=1.5)
    assert f.parse("dropout", "0.25") == 0.25
