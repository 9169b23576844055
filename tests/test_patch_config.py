"""Config sub-fields of transformers modules: edits build from a copy of the config, never change
the config the model's layers share, undo, and replay through ``to_code()`` on a fresh model.

Parametrized over every transformers architecture in the zoo (tests/fixtures/real.py); for each,
the first module that keeps a config gets its MLP width (or its heads) changed.
"""

from __future__ import annotations

import copy
import types
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from fixtures.real import TRANSFORMERS, build
from fixtures.structure import mismatch
from torch import nn

import torchxray as tx

pytest.importorskip("transformers")

# Config fields worth editing, most telling first: an MLP's width, then the heads.
WIDTHS = ("intermediate_size", "moe_intermediate_size", "d_ff", "n_inner")
HEADS = ("num_attention_heads", "num_heads", "n_head")


def _quiet_build(name: str) -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(name)[0]


def _target(model: nn.Module) -> tuple[str, str, int]:
    """(path, dotted field, new value): the first module keeping a config whose class reads a
    width (else a heads count) from it, with a value that changes its shape."""
    for names, new in ((WIDTHS, lambda v: v + 32), (HEADS, lambda v: v * 2)):
        for path, m in model.named_modules():
            if not path or "config" not in m.__dict__:
                continue
            f = tx.form(m)
            for key in names:
                dotted = f"config.{key}"
                if dotted in f.values and f[dotted].read and isinstance(f.values[dotted], int):
                    return path, dotted, new(f.values[dotted])
    raise AssertionError("no module keeps a config with a width or heads field")


def _config_state(model: nn.Module) -> dict[str, Any]:
    return copy.deepcopy(model.config.to_dict())  # type: ignore[union-attr, operator]


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_config_edit_copies_undoes_and_replays(name: str) -> None:
    model = _quiet_build(name)
    fresh = _quiet_build(name)
    path, dotted, value = _target(model)
    before_cfg = _config_state(model)
    shared = model.get_submodule(path).config
    shared_before = copy.deepcopy(shared.to_dict())
    old = model.get_submodule(path)

    f = tx.form(old)
    assert f[dotted].group == "config" and f[dotted].origin in ("attribute", "inferred")
    log = tx.PatchLog(model)
    entry = log.edit(path, **{dotted: str(value)})
    new = model.get_submodule(path)
    assert new is not old and getattr(new.config, dotted.split(".", 1)[1]) == value
    if dotted.split(".", 1)[1] in WIDTHS:
        assert mismatch(old, new) is not None  # the width really changed
    assert entry.changes[dotted][1] == value
    assert tx.form(new).values[dotted] == value
    # The shared config is untouched; the rebuilt module holds its own copy.
    assert _config_state(model) == before_cfg and shared.to_dict() == shared_before
    assert new.config is not shared

    code = log.to_code()
    assert "_config(" in code
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "<to_code>", "exec"), {"model": fresh})
    assert mismatch(model, fresh) is None
    assert _config_state(fresh) == before_cfg

    log.undo()
    assert model.get_submodule(path) is old
    assert mismatch(model, _quiet_build(name)) is None


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_bad_config_value_is_refused_next_to_its_field(name: str) -> None:
    model = _quiet_build(name)
    path, dotted, _ = _target(model)
    old = model.get_submodule(path)
    log = tx.PatchLog(model)
    with pytest.raises(tx.FormError) as err:
        log.edit(path, **{dotted: "abc"})
    assert dotted in err.value.errors and "expected an integer" in err.value.errors[dotted]
    assert model.get_submodule(path) is old and not log.entries


def test_heads_that_do_not_divide_the_width_are_refused() -> None:
    model = _quiet_build("hf-bert")
    path = "encoder.layer.0.attention.self"
    old = model.get_submodule(path)
    with pytest.raises(tx.FormError) as err:
        tx.PatchLog(model).edit(path, **{"config.num_attention_heads": 5})
    assert "not a multiple" in err.value.errors["config.num_attention_heads"]
    assert "__init__" in err.value.errors
    assert model.get_submodule(path) is old and model.config.num_attention_heads == 4


def test_read_fields_come_first() -> None:
    model = _quiet_build("hf-llama")
    f = tx.form(model.model.layers[0].self_attn)
    subs = [x for x in f.fields if x.group == "config"]
    flags = [x.read for x in subs]
    assert flags[0] is True and False in flags
    assert flags == sorted(flags, reverse=True)  # every read field before every other one
    assert "config.num_attention_heads" in [x.name for x in subs if x.read]


def test_a_dict_for_the_config_means_its_fields() -> None:
    model = _quiet_build("hf-llama")
    f = tx.form(model.model.layers[0].mlp)
    new = f.build(config={"intermediate_size": 48})
    assert new.gate_proj.out_features == 48 and model.config.intermediate_size == 128


@dataclass
class MlpSpec:
    width: int = 8
    hidden: int = 16


class SpecMlp(nn.Module):
    def __init__(self, spec: MlpSpec) -> None:
        super().__init__()
        self.spec = spec
        self.up = nn.Linear(spec.width, spec.hidden)


class NsMlp(nn.Module):
    def __init__(self, cfg: types.SimpleNamespace) -> None:
        super().__init__()
        self.cfg = cfg
        self.up = nn.Linear(cfg.width, cfg.hidden)


@pytest.mark.parametrize(
    ("module", "arg"),
    [
        (SpecMlp(MlpSpec()), "spec"),
        (NsMlp(types.SimpleNamespace(width=8, hidden=16)), "cfg"),
    ],
)
def test_dataclass_and_namespace_configs(module: nn.Module, arg: str) -> None:
    f = tx.form(module)
    assert f[f"{arg}.hidden"].value == 16 and f[f"{arg}.hidden"].read is True
    original = getattr(module, arg)
    holder = nn.Sequential(module)
    log = tx.PatchLog(holder)
    log.edit("0", **{f"{arg}.hidden": "24"})
    assert holder[0].up.out_features == 24 and original.hidden == 16
    fresh = nn.Sequential(type(module)(copy.deepcopy(original)))
    exec(compile(log.to_code(), "<to_code>", "exec"), {"model": fresh})
    assert fresh[0].up.out_features == 24
    assert torch.equal(fresh[0].up.weight.new_zeros(1), torch.zeros(1))
