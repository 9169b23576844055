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


class _Encoder(nn.Module):
    """Social-GAN's encoder (blind7): ``mlp_dim`` is taken, never used, and an attribute of the
    same name is set to a literal."""

    def __init__(self, embedding_dim=64, h_dim=64, mlp_dim=1024):
        super().__init__()
        self.mlp_dim = 1024
        self.h_dim = h_dim
        self.embedding_dim = embedding_dim
        self.encoder = nn.LSTM(embedding_dim, h_dim)


def test_an_attribute_set_apart_from_its_argument_is_not_shown_as_read() -> None:
    import torchxray as tx

    assert attributes.set_apart(_Encoder, "mlp_dim")
    assert not attributes.set_apart(_Encoder, "h_dim") and not attributes.set_apart(Block, "dim")
    f = tx.form(_Encoder(16, 32, mlp_dim=64))
    assert f["mlp_dim"].origin == "default"  # a guess the view flags, not 1024 "read"
    assert (f["h_dim"].value, f["h_dim"].origin) == (32, "attribute")


class _Aliased(nn.Module):
    def __init__(self, sizes, scale=2):
        super().__init__()
        kept = sizes
        self.sizes = kept  # the argument under a local name: not set apart
        self.scale = abs(scale)  # a builtin of the argument
        self.fc = nn.Linear(sum(sizes), 2)


def test_an_attribute_kept_through_a_local_name_is_not_set_apart() -> None:
    assert not attributes.set_apart(_Aliased, "sizes") and not attributes.set_apart(
        _Aliased, "scale"
    )
