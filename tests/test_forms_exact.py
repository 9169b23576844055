"""The exact check (stage 4, ``_forms/exact/``): a form proves that its unchanged rebuild is the
live module, or says in one line why not; a value the search proved is written as inferred (a
required None too); and an edit changes only what it names (everything else is compared with the
live module before anything is patched)."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from fixtures.forms import exact
from torch import nn
from torch.nn.utils import parametrizations as P

import torchxray as tx
from torchxray import forms as pipeline
from torchxray._forms.record import recorded_args
from torchxray._patch.gate import Inexact


class Tagged(nn.Module):
    """``tag`` shapes the norm in a way no search can guess: by its length, not a string the
    code names."""

    def __init__(self, channels: int = 32, tag: str = "wide", dropout: float = 0.0) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(8 if len(tag) == 6 else 32, channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.drop = nn.Dropout(dropout)


def _state(m: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in m.state_dict().items()}


def test_an_inexact_form_says_which_part_differs() -> None:
    m = Tagged(tag="narrow")
    f = tx.form(m)
    assert f.inexact.startswith("inexact: norm would be GroupNorm(32, 32")
    assert "the live one is GroupNorm(8, 32" in f.inexact
    assert tx.form(Tagged()).inexact == ""


def test_an_inexact_edit_is_refused_and_changes_nothing() -> None:
    model = nn.Sequential(Tagged(tag="narrow"))
    block, before = model[0], _state(model)
    log = tx.PatchLog(model)
    with pytest.raises(Inexact) as err:
        log.edit("0", dropout=0.1)
    assert "norm would be GroupNorm(32, 32" in str(err.value)
    assert "_inexact_ok=True" in str(err.value)
    assert model[0] is block and not log.entries
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_inexact_ok_applies_and_lists_every_change() -> None:
    model = nn.Sequential(Tagged(tag="narrow"))
    entry = tx.PatchLog(model).edit("0", dropout=0.1, _inexact_ok=True)
    assert any(e.startswith("norm: GroupNorm(8, 32") for e in entry.effects)
    assert any(e.startswith("drop: Dropout(p=0.0") for e in entry.effects)


def test_setting_the_field_that_differs_makes_the_edit_exact() -> None:
    model = nn.Sequential(Tagged(tag="narrow"))
    entry = tx.PatchLog(model).edit("0", dropout=0.1, tag="narrow")
    assert entry.effects == (
        "drop: Dropout(p=0.0, inplace=False) -> Dropout(p=0.1, inplace=False)",
    )
    assert model[0].norm.num_groups == 8


def test_an_exact_edit_lists_what_it_changed() -> None:
    model = nn.Sequential(Tagged())
    entry = tx.PatchLog(model).edit("0", channels=64)
    assert entry.effects[0].startswith("norm: GroupNorm(32, 32")
    assert "conv: Conv2d(32, 32" in " ".join(entry.effects)


def test_diffusers_resnet_block_edits_only_its_dropout() -> None:
    """The issue's silent case: GroupNorm(8, 32) rebuilt as GroupNorm(32, 32), a time_emb_proj
    that the block does not have."""
    diffusers = pytest.importorskip("diffusers")
    vae = diffusers.AutoencoderKL(
        block_out_channels=(32, 64),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        latent_channels=4,
        norm_num_groups=8,
    )
    path = "encoder.down_blocks.0.resnets.0"
    block = vae.get_submodule(path)
    params = sum(p.numel() for p in block.parameters())
    assert tx.form(block).inexact == ""
    entry = tx.PatchLog(vae).edit(path, dropout=0.1)
    assert entry.effects == (
        "dropout: Dropout(p=0.0, inplace=False) -> Dropout(p=0.1, inplace=False)",
    )
    assert sum(p.numel() for p in vae.get_submodule(path).parameters()) == params


class Two(nn.Module):
    def __init__(self, width: int = 64, out: int = 32) -> None:
        super().__init__()
        self.lin1 = nn.Linear(width, width)
        self.lin2 = nn.Linear(width, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin2(self.lin1(x))


def test_quantized_weights_survive_an_edit_that_does_not_reach_them() -> None:
    quant = pytest.importorskip("torchao.quantization")
    model = nn.Sequential(Two())
    quant.quantize_(model, quant.Int8WeightOnlyConfig())
    kind = type(model[0].lin1.weight)
    assert kind not in (torch.Tensor, nn.Parameter)
    # Logical shapes match (a quantized weight is (64, 64)); its type a rebuild does not make.
    f = tx.form(model[0])
    assert f.inexact.startswith("inexact: lin1.weight is a torchao ") and f.check.typed
    entry = tx.PatchLog(model).edit("0", out=16)  # no _inexact_ok: the edit carries lin1's
    assert type(model[0].lin1.weight) is kind  # kept, not cast into a plain tensor
    assert "lin2.weight" in entry.reinitialised
    assert model(torch.randn(2, 64)).shape == (2, 16)


class Convs(nn.Module):
    def __init__(self, channels: int = 4, drop: float = 0.0) -> None:
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3)
        self.drop = nn.Dropout(drop)


def test_weight_norm_added_after_construction_survives_an_edit() -> None:
    model = nn.Sequential(Convs())
    P.weight_norm(model[0].conv)
    weight = model[0].conv.weight.detach().clone()
    assert tx.form(model[0]).inexact == ""
    tx.PatchLog(model).edit("0", drop=0.5)
    conv = model[0].conv
    assert torch.nn.utils.parametrize.is_parametrized(conv, "weight")
    assert torch.allclose(conv.weight, weight)


def test_root_form_applies_binds_the_new_model_and_undoes() -> None:
    model = nn.Sequential(Tagged())
    outer = nn.ModuleDict({"body": model})
    log = tx.PatchLog(model)
    entry = log.edit("", args=(Tagged(channels=64),))
    assert entry.paths[0] == "" and log.model is not model
    assert log.model[0].conv.in_channels == 64 and "model = new" in log.to_code()
    log.undo()
    assert log.model is model and outer["body"] is model


def test_explorer_root_edit() -> None:
    class Net(nn.Module):
        def __init__(self, width: int = 8, depth: int = 2) -> None:
            super().__init__()
            self.body = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.body(x)

    ex = tx.explore(Net(), torch.randn(1, 8))
    try:
        ex.edit("", depth=3)
        assert len(ex.model.body) == 3 and ex.probe_report.ok
        ex.undo()
        assert len(ex.model.body) == 2
    finally:
        ex.close()


def test_the_search_says_when_it_ran_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "SEARCH_WORK", 0)

    class Wide(nn.Module):
        def __init__(self, a: int, b: int) -> None:
            super().__init__()
            self.lin = nn.Linear(a * 3 + 1, b * 5 + 2)

    f = tx.form(Wide(3, 4))
    assert "ran out of its budget" in f.hint
    assert f.inexact


class Keeps(nn.Module):
    def __init__(self, t: torch.Tensor, owner: nn.Module | None = None) -> None:
        super().__init__()
        self.register_buffer("b", t.clone())


def test_records_hold_tensors_and_modules_weakly() -> None:
    t = torch.ones(3)
    owner = nn.Linear(2, 2)
    with tx.record_init_args():
        m = Keeps(t, owner)
    assert recorded_args(m) is not None and tx.form(m)["t"].origin == "recorded"
    gone = weakref.ref(owner)
    del t, owner
    gc.collect()
    assert gone() is None  # the record did not keep the module alive
    assert recorded_args(m) is None  # and a record missing its tensor is not used


def test_record_everything_and_the_ipython_extension() -> None:
    tx.load_ipython_extension(None)
    try:
        m = Tagged(tag="narrow")
    finally:
        tx.unload_ipython_extension(None)
    f = tx.form(m)
    assert f["tag"].origin == "recorded" and f.inexact == ""
    assert tx.form(Tagged(tag="narrow")).inexact  # built after recording stopped
    tx.record_everything()
    tx.record_everything()  # idempotent: one switch, not a counter
    tx.record_everything(False)
    assert tx.form(Tagged(tag="narrow"))["tag"].origin != "recorded"


class TwoLayers(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.seq = nn.Sequential(nn.Linear(width, width), nn.ReLU())


class ScriptsItsLayer(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.seq = torch.jit.script(nn.Sequential(nn.Linear(width, width), nn.ReLU()))


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.jit.script is deprecated
def test_a_scripted_child_opens_the_form_and_is_named_as_what_it_cannot_rebuild() -> None:
    # A ScriptModule's `_modules` is a wrapper without __iter__ (iterated, Python indexes it
    # with 0: KeyError 0); scripted after construction, no argument makes it again.
    m = TwoLayers(width=6)
    m.seq = torch.jit.script(m.seq)
    f = tx.form(m)
    assert f["width"].value == 6
    assert f.inexact.startswith("inexact: seq is a TorchScript module (torch.jit.script)")
    assert "cannot rebuild exactly" in f.inexact and "RecursiveScriptModule" in f.inexact
    # A constructor that scripts the layer itself rebuilds it: exact.
    f = tx.form(ScriptsItsLayer(width=6))
    assert f.inexact == "" and f["width"].value == 6


@pytest.mark.usefixtures("roomy_form_budget")
def test_a_required_value_proven_none_is_given() -> None:
    transformers = pytest.importorskip("transformers")
    swin2sr = pytest.importorskip("transformers.models.swin2sr.modeling_swin2sr")
    cfg = transformers.Swin2SRConfig(
        image_size=16, embed_dim=12, depths=[1], num_heads=[2], window_size=4
    )
    # drop_path is required and unused: None rebuilds it, and the form gives None.
    stage = swin2sr.Swin2SRStage(cfg, 12, (4, 4), 1, 2, [0.0])
    f = exact(stage)
    assert f.build() is not None
