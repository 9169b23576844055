"""A dict config read by constant string keys (``_forms/sources/keyed.py``) searched key by key,
and a namespace field read by a constant index (``usage.py``: a sequence): the hand-written
models of ``tests/handwritten/styles5.py`` (random init, CPU, small), each form exact with the
values the model was built with, or refused where a reading cannot be told apart."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from fixtures.forms import exact
from torch import nn

import torchxray as tx
from tests.handwritten.styles5 import DictNet, DictVAE, Tagger, TinySR
from torchxray._forms.sources.keyed import keys_of, reads_at
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_the_keys_a_constructor_reads_what_each_stands_for() -> None:
    top = keys_of(*reads_at(DictVAE, "hp", ()))  # type: ignore[misc]
    # In the order read; "dropout" is only tested with `in` first: optional (None: left out).
    assert top.names == ["features", "enc", "dec", "dropout"] and top.optional == {"dropout"}
    assert not top.other
    # **hp["enc"] into GaussianEncoder(hp["features"], ...): its other parameters, defaults too.
    enc = keys_of(*reads_at(DictVAE, "hp", ("enc",)))  # type: ignore[misc]
    assert enc.names == ["hidden", "latent", "layers"] and enc.defaults == {"layers": 1}
    # dec = hp["dec"]; dec["hidden"]: read through the name it is bound to.
    assert keys_of(*reads_at(DictVAE, "hp", ("dec",))).names == ["hidden"]  # type: ignore[misc]
    tag = keys_of(*reads_at(Tagger, "hp", ()))  # type: ignore[misc]
    # "name" is read only in the raise's message: a build that succeeds never reads it.
    assert tag.names == ["heads", "vocab", "dim", "tags"] and tag.defaults == {"tags": 9}


def test_a_dict_read_by_keys_is_found_key_by_key() -> None:
    cfg = {"in_ch": 3, "width": 12, "depth": 2, "unit": "gated", "num_classes": 5}
    f = exact(DictNet(cfg))
    # The block's key comes from the table it is looked up in (UNITS); the form builds the dict.
    assert f["cfg"].value == cfg and f["cfg"].origin == "inferred"
    assert tx.form(DictNet({**cfg, "unit": "plain"}))["cfg"].value["unit"] == "plain"


@pytest.mark.parametrize("dropout", [None, 0.25])
def test_nested_dicts_a_spread_one_and_a_tested_key(dropout: float | None) -> None:
    hp = {"features": 4, "enc": {"hidden": 8, "latent": 3, "layers": 2}, "dec": {"hidden": 6}}
    if dropout is not None:
        hp["dropout"] = dropout
    assert exact(DictVAE(hp))["hp"].value == hp  # "dropout" is in the dict only where given


def test_a_key_with_a_default_and_a_key_read_in_a_raise() -> None:
    f = exact(Tagger({"vocab": 30, "dim": 16, "heads": 4, "tags": 7, "name": "pos"}))
    assert f["hp"].value == {"heads": 4, "vocab": 30, "dim": 16, "tags": 7}


class _Mixed(nn.Module):
    def __init__(self, cfg):  # type: ignore[no-untyped-def]
        super().__init__()
        self.fc = nn.Linear(cfg.width, cfg["classes"])


class _AttrDict(dict):  # type: ignore[type-arg]
    __getattr__ = dict.__getitem__


def test_a_config_read_by_fields_and_keys_alike_is_left_whole() -> None:
    assert keys_of(*reads_at(_Mixed, "cfg", ())).other  # type: ignore[misc]
    # Neither a namespace nor a dict: refused in one sentence, never a wrong value.
    assert "inexact" in tx.form(_Mixed(_AttrDict(width=4, classes=3))).inexact


class _Pair(nn.Module):
    def __init__(self, size, n=4):  # type: ignore[no-untyped-def]
        super().__init__()
        size = size if isinstance(size, tuple) else (size, size)
        self.fc = nn.Linear(size[0] * size[1], n)


def test_a_name_indexed_by_a_constant_int_is_a_sequence() -> None:
    u = usage(TinySR, "opt", ("scale",))
    assert u.indexed and not u.number and not u.sequence
    # Rebound first (an int made a pair): the index says nothing of what was given.
    assert not usage(_Pair, "size").indexed


def test_a_namespace_field_read_by_its_index_is_found_and_its_length_flagged() -> None:
    f = exact(TinySR(SimpleNamespace(scale=[2], colors=3, feats=8, blocks=2)))
    opt = f["opt"].value
    assert (opt.scale, opt.colors, opt.feats, opt.blocks) == ([2], 3, 8, 2)
    # Only its first item is read: [2, 2] rebuilds as exactly, so the config is a flagged guess.
    assert f["opt"].origin == "default" and "scale=[2, 2]" in f["opt"].note
