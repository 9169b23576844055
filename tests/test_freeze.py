"""PatchLog.freeze / unfreeze: undoable, redoable, replayable, listed in the History."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn
from fixtures.real import build

import torchxray as tx


def _flags(model: nn.Module) -> dict[str, bool]:
    return {n: p.requires_grad for n, p in model.named_parameters(remove_duplicate=False)}


def _tensor_ids(model: nn.Module) -> list[tuple[str, int, int]]:
    """Module identities and tensor identities: a freeze changes flags, nothing else."""
    return [(n, id(m), id(t)) for n, m in model.named_modules() for t in m.parameters(False)]


def test_freeze_a_timm_model_undo_redo_and_replay() -> None:
    model, _, _ = build("timm-resnet18")
    model.fc.bias.requires_grad_(False)  # frozen by the user before: undo must keep it so
    fresh = copy.deepcopy(model)
    before, ids = _flags(model), _tensor_ids(model)
    log = tx.PatchLog(model)
    under = tx.select(model, r"^layer[12]$") + ["fc"]
    entry = log.freeze(under)
    assert (entry.op, entry.paths) == ("freeze", ("layer1", "layer2", "fc"))
    assert entry.old_cls == entry.new_cls == "Sequential, Linear"
    frozen = {n for n, f in _flags(model).items() if not f}
    assert frozen == {n for n in before if n.startswith(("layer1.", "layer2.", "fc."))}
    assert _tensor_ids(model) == ids
    assert [e.op for e in log.entries] == ["freeze"] and "freeze layer1, layer2, fc" in entry.code

    unfreeze = log.unfreeze(["layer2.0"])
    assert unfreeze.op == "unfreeze"
    assert all(p.requires_grad for p in model.layer2[0].parameters())
    assert not any(p.requires_grad for p in model.layer2[1].parameters())

    namespace = {"model": fresh}
    exec(log.to_code(), namespace)  # noqa: S102 - the replay code is what is tested
    assert _flags(fresh) == _flags(model)

    after = _flags(model)
    assert log.undo() is unfreeze and not any(p.requires_grad for p in model.layer2.parameters())
    log.undo()
    assert _flags(model) == before  # fc.bias stays frozen: each flag goes back to its own value
    log.redo()
    log.redo()
    assert _flags(model) == after and _tensor_ids(model) == ids


def test_freeze_shared_parameters_once_on_a_transformers_model() -> None:
    model, _, _ = build("hf-gpt2")
    assert model.lm_head.weight is model.transformer.wte.weight  # tied
    log = tx.PatchLog(model)
    entry = log.freeze(["lm_head", "transformer.wte"])
    assert "1 parameter (1 changed)" in entry.code
    assert not model.transformer.wte.weight.requires_grad
    assert all(p.requires_grad for p in model.transformer.h.parameters())
    entry = log.freeze(tx.select(model, cls="GPT2Block"))
    assert not any(p.requires_grad for p in model.transformer.h.parameters())
    assert model.transformer.ln_f.weight.requires_grad
    log.undo()
    log.undo()
    assert all(p.requires_grad for p in model.parameters())


def test_freeze_mixes_with_replacements_in_one_history() -> None:
    model, _, _ = build("hf-llama")
    log = tx.PatchLog(model)
    old = model.model.layers[0].mlp
    log.freeze(["model.layers.0.mlp"])
    log.replace("model.layers.0.mlp", nn.Identity())
    log.unfreeze(["model.layers.0"])
    assert [e.op for e in log.entries] == ["freeze", "replace", "unfreeze"]
    log.undo()
    log.undo()
    assert model.model.layers[0].mlp is old and not any(p.requires_grad for p in old.parameters())
    log.undo()
    assert all(p.requires_grad for p in model.parameters())


def test_unfreeze_leaves_integer_parameters_alone() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    model[0].register_parameter("steps", nn.Parameter(torch.zeros(1, dtype=torch.long), False))
    log = tx.PatchLog(model)
    log.freeze(["0"])
    entry = log.unfreeze(["0"])
    assert model[0].weight.requires_grad and not model[0].steps.requires_grad
    assert "2 parameters" in entry.code
    fresh = nn.Sequential(nn.Linear(2, 2))
    fresh[0].register_parameter("steps", nn.Parameter(torch.zeros(1, dtype=torch.long), False))
    exec(log.to_code(), {"model": fresh})  # noqa: S102
    assert _flags(fresh) == _flags(model)


def test_bad_input_changes_nothing() -> None:
    model, _, _ = build("timm-resnet18")
    before, ids = _flags(model), _tensor_ids(model)
    log = tx.PatchLog(model)
    with pytest.raises(KeyError, match="no submodule at path 'layer1.0.conv'"):
        log.freeze(["layer1.0.conv1", "layer1.0.conv"])
    with pytest.raises(KeyError, match="is a parameter or buffer of 'fc'"):
        log.freeze(["fc.weight"])
    with pytest.raises(ValueError, match="got no paths: the selection matched nothing"):
        log.freeze(tx.select(model, "attention"))
    with pytest.raises(ValueError, match="no parameters under 'act1'; nothing to unfreeze"):
        log.unfreeze(["act1"])
    with pytest.raises(TypeError, match="takes dotted module paths"):
        log.freeze([3])  # type: ignore[list-item]
    assert _flags(model) == before and _tensor_ids(model) == ids and log.entries == ()
    assert log.freeze("layer1").paths == ("layer1",)  # one path as a plain string
