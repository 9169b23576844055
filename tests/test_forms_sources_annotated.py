"""A config argument's annotation (``_forms/sources/annotated.py``): a plain dict, a class made
from keywords alone, and the table a field is looked up in."""

from __future__ import annotations

import argparse
import types

from torch import nn

from tests.handwritten.dictconfigs import GaussianPolicy
from torchxray._forms.sources.annotated import bag, dict_annotation, looked_up


def test_a_dict_annotation() -> None:
    for text in ("dict", "dict[str, Any]", "Dict[str, int]", "Mapping[str, Any]", "dict | None"):
        assert dict_annotation(text), text
    for text in ("Optional[dict]", "typing.Optional[Dict[str, Any]]", "None | Mapping"):
        assert dict_annotation(text), text  # "Optional[dict]" read as "dict]" before
    assert not dict_annotation("list[int]") and not dict_annotation("Config")
    assert not dict_annotation("Optional[int]") and not dict_annotation("list[dict]")


def test_a_class_made_from_keywords_alone() -> None:
    class Takes(nn.Module):
        def __init__(self, a: argparse.Namespace, b: types.SimpleNamespace, c: nn.Linear, d: int):
            super().__init__()

    assert bag(Takes, "a") and bag(Takes, "b")
    assert not bag(Takes, "c") and not bag(Takes, "d")


def test_the_table_a_field_is_looked_up_in() -> None:
    assert looked_up([(GaussianPolicy, "opts", ("nonlinearity",))]) == ("silu", "tanh", "relu")
    assert looked_up([(GaussianPolicy, "opts", ("widths",))]) == ()
