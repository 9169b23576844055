"""The rebuild search's registry (``_forms/candidates/rules/__init__.py``): every rule file is in it, under
its file's name, with a docstring and a test of its own (tests/test_forms_candidates_rule_<relation>.py),
and the search reads a difference through the rules in the registry's order."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.rules import proposed

from torchxray._forms.candidates import rules
from torchxray._forms.candidates.guide import proposals
from torchxray._forms.candidates.rules import NAMED, RULES, UNNAMED, Problem
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.signature import signature

_NOT_RULES = {"problem", "numbers"}
TESTS = Path(__file__).parent


def _rule_files() -> set[str]:
    return {m.name for m in pkgutil.iter_modules(rules.__path__)} - _NOT_RULES


def test_every_rule_file_is_registered_under_its_name_with_a_docstring_and_a_test() -> None:
    assert {r.name for r in RULES} == _rule_files()
    for r in RULES:
        module = importlib.import_module(f"torchxray._forms.candidates.rules.{r.name}")
        assert r.propose is module.propose
        assert module.__doc__ and len(module.__doc__.split()) > 20, r.name
        assert (TESTS / f"test_forms_candidates_rule_{r.name}.py").is_file(), r.name


def test_the_members_of_a_dataclass_argument_are_read_by_the_same_rules() -> None:
    members = [r.name for r in RULES if r.scope == "members"]
    assert members == [n for n, _ in NAMED] + [n for n, _ in UNNAMED]
    module = [r.name for r in RULES if r.scope == "module"]
    assert len(module) == len(set(module))


def test_the_search_reads_a_difference_through_the_rules_in_order() -> None:
    # Every rule of the module's scope, one after the other, proposes what the guide proposes
    # for a class with no dataclass argument, in the same order.
    layers = pytest.importorskip("timm.layers")
    live = dict(in_features=32, hidden_features=64)
    built = dict(in_features=32, hidden_features=128)

    def every(p: Problem) -> Iterator[dict[str, Any]]:
        for r in RULES:
            if r.scope == "module":
                yield from r.propose(p)

    def guided(p: Problem) -> Iterator[dict[str, Any]]:
        if p.index == 0:  # the guide reads every difference itself
            yield from proposals(
                diffs, list(p.fields), dict(p.values), module, signature(type(module)), p.modes
            )

    module, wrong = layers.Mlp(**live), layers.Mlp(**built)
    diffs = differences(parts(module), parts(wrong))
    ordered = proposed(every, layers.Mlp, live, built)
    assert {"hidden_features": 64} in ordered
    assert proposed(guided, layers.Mlp, live, built) == ordered
