"""Hyperparameters held in a dict, a dict-like object or a kept ``**kwargs`` (round 4 of the forms
rules; models in ``tests/handwritten/dictconfigs.py``): each reading alone, then the forms it
makes exact, with the values that two builds cannot tell apart flagged, never shown as proven."""

from __future__ import annotations

import argparse
import copy

from torch import nn

import torchxray as tx
from tests.handwritten import CASES
from tests.handwritten.dictconfigs import (
    FieldDict,
    FieldEmbedder,
    GaussianPolicy,
    MemoryBlock,
    MemoryStack,
    TaskHeads,
)
from torchxray._forms.record import snapshot
from torchxray._forms.sources.fills import filled
from torchxray._forms.sources.mapped import mapped
from torchxray._forms.sources.moduli import moduli
from torchxray._forms.sources.periods import periods


def _form(name: str, path: str = "") -> tx.Form:
    return tx.form(CASES[name].build().get_submodule(path))


def _field(form: tx.Form, name: str) -> object:
    return next(f for f in form.fields if f.name == name)


def test_a_dict_iterated_into_a_moduledict_reads_back_off_it() -> None:
    m = FieldEmbedder({"vocab": {"city": 12, "device": 5}, "width": 6, "out": 3})
    assert mapped(FieldEmbedder, m, "spec.vocab") == [{"city": 12, "device": 5}]
    heads = TaskHeads(8, {"b": 3, "a": 1})  # keys in the order given, through a helper method
    assert mapped(TaskHeads, heads, "outputs") == [{"b": 3, "a": 1}]


def test_the_period_of_the_blocks_made_otherwise() -> None:
    stack = MemoryStack(dict(in_dim=5, d=12, hidden=20, memory_dim=7, memory_every=3, depth=7))
    assert 3 in periods(stack)
    plain = nn.Sequential(*[nn.Linear(4, 4) for _ in range(4)])
    assert periods(plain) == []


def test_a_remainder_test_names_its_two_sides() -> None:
    assert moduli(MemoryBlock) == (("index", "opts.memory_every"),)


def test_a_tensor_filled_with_a_field_reads_back() -> None:
    opts = argparse.Namespace(
        state_dim=3, action_dim=2, widths=[4], nonlinearity="tanh", log_std0=-0.75
    )
    assert filled(GaussianPolicy, GaussianPolicy(opts), "opts.log_std0") == [-0.75]


def test_a_dict_whose_fields_are_its_items_is_copied_with_them() -> None:
    hp = FieldDict(n_mels=6, rates=[2, 2])
    (got,), _ = snapshot((hp,), {})
    assert got is not hp and got.n_mels == 6 and got.rates == [2, 2] and got.rates is not hp.rates
    got["n_mels"] = 7
    assert got.n_mels == 7 and hp.n_mels == 6  # its fields are its own items, as the original's
    assert not hasattr(copy.deepcopy(hp), "n_mels")  # why: a deep copy loses them


def test_forms_of_the_dict_habits_are_exact() -> None:
    for name, path, field, value in [
        ("dict_vocab_moduledict", "", "spec", None),
        ("dict_heads_helper", "", "outputs", {"age": 1, "mood": 4, "topic": 7}),
        ("dict_whole_to_blocks", "", "opts", None),
        ("namespace_policy_argparse", "", "opts", None),
        ("attrdict_kept", "", "hp", None),
        ("kwargs_kept_whole", "1", "opts", {"damping": 0.25, "tol": 1e-4}),
        ("config_handed_annotated", "0", "cfg", None),
    ]:
        f = _form(name, path)
        assert not f.inexact, (name, f.inexact)
        if value is not None:
            assert _field(f, field).value == value, name  # type: ignore[attr-defined]
    whole = _field(_form("dict_whole_to_blocks"), "opts")
    # Every 3rd block reads the memory: the period is proven by the stack (its blocks 0 and 3).
    assert whole.origin == "inferred"  # type: ignore[attr-defined]
    assert whole.value == dict(  # type: ignore[attr-defined]
        in_dim=5, d=12, depth=5, hidden=20, memory_every=3, memory_dim=7
    )
    vocab = _field(_form("dict_vocab_moduledict"), "spec").value  # type: ignore[attr-defined]
    assert vocab["vocab"] == {"city": 12, "device": 5, "hour": 24} and vocab["width"] == 6


def test_a_blocks_place_and_period_are_guesses_where_another_pair_builds_alike() -> None:
    f = _form("dict_whole_to_blocks", "blocks.3")  # 3 % 3 == 0: so is 0 % k, and 3 % 1
    assert not f.inexact
    index = _field(f, "index")
    assert index.origin == "default" and index.note  # type: ignore[attr-defined]
    assert _field(f, "opts").origin == "default"  # type: ignore[attr-defined]


def test_kwargs_kept_whole_are_the_attribute() -> None:
    f = tx.form(CASES["kwargs_kept_whole"].build()[1])
    assert _field(f, "opts").value == {"damping": 0.25, "tol": 1e-4}  # type: ignore[attr-defined]
