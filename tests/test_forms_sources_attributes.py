"""The source ``attributes`` (``_forms/sources/attributes.py``): a constructor keeps most of what
it is given under the parameter's own name, or in a layer made from it; its layers keep the same
values under the same names or well-known aliases."""

from __future__ import annotations

import inspect

from torch import nn

from torchxray._forms.field import make_field
from torchxray._forms.sources import attributes


class Block(nn.Module):
    def __init__(self, dim: int, dropout: float = 0.0, bias: bool = True, mode: str = "a") -> None:
        super().__init__()
        self.dim = dim
        self.dropout = nn.Dropout(dropout)
        self.bias = nn.Parameter(nn.init.zeros_(nn.Linear(1, dim).bias)) if bias else None
        self.proj = nn.Linear(dim, dim * 2)


def _param(name: str) -> inspect.Parameter:
    return inspect.signature(Block).parameters[name]


def test_an_attribute_a_rate_and_a_flag_are_read_from_the_module() -> None:
    m = Block(8, dropout=0.25, bias=False)
    assert attributes.draft(m, _param("dim")) == (8, "attribute")
    assert attributes.draft(m, _param("dropout")) == (0.25, "derived")  # the layer's p
    assert attributes.draft(m, _param("bias")) == (False, "derived")  # None: no bias tensor
    assert attributes.draft(m, _param("mode")) is None  # kept nowhere: the next source


def test_the_layers_keep_same_named_and_aliased_values() -> None:
    m = Block(8)
    f, _ = make_field(Block, _param("dim"), None, "default")
    found, own = attributes.same_named(m, f, "in_features")
    # proj.in_features; the module's own "dim" is the field itself, not a candidate.
    assert found == [8] and own == {"in_features"}
    found, _ = attributes.same_named(m, f, "out_features")
    assert found[0] == 16  # an output width is the last layer's first
