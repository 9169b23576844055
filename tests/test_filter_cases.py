"""The tree filter's cases (js/filter_cases.json) against the kernel's filter: the saved view
(js/filter_match.ts, checked by vitest) reads the same table, so a query matches the same modules
live and saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from torch import nn

from torchxray import walk
from torchxray._view import serialize as ser

TABLE = json.loads((Path(__file__).parents[1] / "js" / "filter_cases.json").read_text("utf-8"))


def _model(nodes: list[list[str]]) -> nn.Module:
    """Modules at the table's paths, each of a class of the table's name."""
    classes: dict[str, type[nn.Module]] = {}

    def make(cls: str) -> nn.Module:
        return classes.setdefault(cls, type(cls, (nn.Module,), {}))()

    root = make(nodes[0][1])
    for path, cls in nodes[1:]:
        parent, _, name = path.rpartition(".")
        root.get_submodule(parent).add_module(name, make(cls))
    return root


TREE = walk(_model(TABLE["nodes"]))


def test_the_table_builds_the_tree_it_names() -> None:
    assert [(n.path, n.cls) for n in TREE.nodes] == [tuple(n) for n in TABLE["nodes"]]


@pytest.mark.parametrize("case", TABLE["cases"], ids=lambda c: f"{c['regex']}-{c['query']}")
def test_the_kernel_filters_as_the_table_says(case: dict[str, Any]) -> None:
    query, regex, names = case["query"], case["regex"], case.get("names", False)
    if case.get("error"):
        with pytest.raises(ValueError, match="bad regular expression"):
            ser.matching(TREE, query, regex, names)
        return
    assert [n.path for n in ser.matching(TREE, query, regex, names)] == case["match"]
