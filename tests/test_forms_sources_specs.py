"""The source ``_forms/sources/specs.py`` alone: a dict of keyword dicts, one layer made per entry
(``for k, spec in towers.items(): self.towers[k] = Tower(d, **spec)``), read back off the layers
it made; and the form that rebuilds such a module."""

from __future__ import annotations

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.specs import specs

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Head(nn.Module):
    def __init__(self, d, hidden=8, out=1, bias=True):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.out = nn.Linear(hidden, out, bias=bias)


class Heads(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.trunk = nn.Linear(d, d)
        self.heads = nn.ModuleDict()
        for name, spec in heads.items():
            self.heads[name] = Head(d, **spec)


class Added(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = nn.Module()
        for name, kw in heads.items():
            self.heads.add_module(name, Head(d, hidden=4, **kw))


def test_the_dict_is_read_back_entry_by_entry() -> None:
    live = Heads(6, {"a": {"hidden": 3}, "b": {"out": 5, "bias": False}})
    got = specs(Heads, live, "heads", tx.form)
    assert got == {"a": {"hidden": 3}, "b": {"out": 5, "bias": False}}
    # add_module, and a keyword the call passes itself is no entry's.
    got = specs(Added, Added(6, {"x": {"out": 2}}), "heads", tx.form)
    assert got == {"x": {"out": 2}}
    # An argument the constructor does not loop over: nothing read.
    assert specs(Heads, live, "d", tx.form) is None


@pytest.mark.parametrize(
    "make",
    [lambda: Heads(6, {"a": {"hidden": 3}, "b": {"out": 5}}), lambda: Added(4, {"x": {"out": 2}})],
    ids=["subscript", "add_module"],
)
def test_the_form_rebuilds_a_module_made_from_a_dict_of_specs(make) -> None:  # type: ignore[no-untyped-def]
    live = make()
    f = tx.form(live)
    assert f.inexact == ""
    assert not differences(parts(live), parts(f.build()))
