"""Sharing is part of the rebuild (``_forms/rebuild/parts.py``, ``compare.py``): which paths hold one
module or one parameter. A rebuild that makes two where the live module holds one has twice the
weights: the gate says so, and the search finds the value that ties them (the zoo's Perceiver,
``weight_tie_layers=True``)."""

from __future__ import annotations

import warnings

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.compare import differences, sentence
from torchxray._forms.rebuild.parts import parts

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Tower(nn.Module):
    def __init__(self, dim: int, depth: int, tie: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList()
        for i in range(depth):
            self.layers.append(self.layers[0] if tie and i else nn.Linear(dim, dim))
        self.head = nn.Linear(dim, 5, bias=False)
        self.embed = nn.Embedding(5, dim)
        if tie:
            self.head.weight = self.embed.weight


def test_one_module_at_two_paths_and_one_parameter_in_two_modules_are_parts() -> None:
    p = parts(Tower(4, 3, tie=True)).items
    assert p["layers.1", "same"] == "layers.0" and p["layers.2", "same"] == "layers.0"
    assert ("layers.1.0", "same") not in p  # only the top of a repeated subtree
    assert p["embed", "tied weight"] == "head.weight"
    live, built = parts(Tower(4, 3, tie=True)), parts(Tower(4, 3))
    diffs = differences(live, built)
    assert {(d.path, d.aspect) for d in diffs} >= {("layers.1", "same"), ("embed", "tied weight")}
    assert "layers.1 would be a module of its own, the live one is layers.0's" in sentence(
        diffs, live, built
    )


def test_the_search_finds_the_flag_that_ties_and_the_gate_refuses_a_tie_made_later() -> None:
    f = tx.form(Tower(4, 3, tie=True))
    assert f.inexact == "" and f["tie"].value is True
    later = Tower(4, 3)
    later.layers[2] = later.layers[1]  # tied after construction: no argument makes it
    why = tx.form(later).inexact
    assert "layers.2 would be a module of its own, the live one is layers.1's" in why


def test_the_zoos_perceiver_is_exact_with_its_layers_tied() -> None:
    from tests.handwritten import CASES

    model = CASES["perceiver_tied"].build()
    f = tx.form(model)
    assert f.inexact == "" and f["weight_tie_layers"].value is True
    built = f.build()
    assert built.layers[1] is built.layers[0]
