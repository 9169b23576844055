"""tx.diff: a model against another model, a state_dict and checkpoint files, tensor by tensor."""

from __future__ import annotations

import copy
import doctest
import importlib
import math
import pickle
import weakref
from pathlib import Path

import pytest
import torch
import torch.nn as nn
from fixtures.real import build
from safetensors.torch import save_file

import torchxray as tx
from torchxray._compare import checkpoint


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def _unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> bool:
    after = model.state_dict()
    return after.keys() == before.keys() and all(torch.equal(after[k], before[k]) for k in before)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((b.double() - a.double()).norm() / a.double().norm())


def test_docstring_example_runs() -> None:
    assert doctest.testmod(importlib.import_module("torchxray.diff")).failed == 0


def test_timm_model_against_an_edited_copy() -> None:
    a, _, _ = build("timm-resnet18")
    b = copy.deepcopy(a)
    before = _state(a)
    with torch.no_grad():
        b.layer1[0].conv1.weight.mul_(1.5)
    b.layer2[0].act1 = nn.GELU()  # another class at the same path
    b.layer3[0].conv1.stride = (1, 1)  # another extra_repr, same weights
    b.extra = nn.Linear(2, 2)
    del b.global_pool
    d = tx.diff(a, b)
    assert d.source == "model" and d
    gone = tuple(p for p, _ in a.named_modules() if p.startswith("global_pool"))
    assert d.added == ("extra",) and d.removed == gone and len(gone) > 1
    assert d.retyped == ("layer2.0.act1",) and d.changed == ("layer3.0.conv1",)
    change = d.params["layer1.0.conv1.weight"]
    expected = _rel(a.layer1[0].conv1.weight, b.layer1[0].conv1.weight)
    assert change.kind == "values" and change.rel_change == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.5, rel=1e-6)
    assert d.params["layer3.0.conv1.weight"].kind == "same"
    assert (
        d.params["extra.weight"].kind == "unexpected" and d.params["extra.weight"].shape_a is None
    )
    assert d.counts["values"] == 1 and d.counts["unexpected"] == 2
    assert d.by_module() == {"layer1.0.conv1": "values"}
    assert not tx.diff(a, copy.deepcopy(a))  # nothing differs
    assert _unchanged(a, before)


def test_transformers_model_against_a_state_dict() -> None:
    a, _, _ = build("hf-llama")
    sd = {k: v.clone() for k, v in a.state_dict().items()}
    q = "model.layers.0.self_attn.q_proj.weight"
    sd[q] = sd[q] + 0.01 * torch.randn_like(sd[q])
    sd["model.norm.weight"] = sd["model.norm.weight"].half()
    sd["model.layers.1.mlp.up_proj.weight"] = torch.zeros(3, 3)
    del sd["model.layers.1.mlp.down_proj.weight"]
    sd["model.extra.bias"] = torch.zeros(2)
    d = tx.diff(a, sd)
    assert (d.source, d.added, d.removed, d.retyped, d.changed) == ("state_dict", (), (), (), ())
    kinds = {name: c.kind for name, c in d.params.items() if c.kind != "same"}
    assert kinds == {
        q: "values",
        "model.norm.weight": "dtype",
        "model.layers.1.mlp.up_proj.weight": "shape",
        "model.layers.1.mlp.down_proj.weight": "missing",
        "model.extra.bias": "unexpected",
    }
    assert d.params[q].rel_change == pytest.approx(_rel(a.state_dict()[q], sd[q]), rel=1e-9)
    norm = d.params["model.norm.weight"]
    assert (norm.dtype_a, norm.dtype_b) == ("float32", "float16") and norm.rel_change == 0.0
    assert d.params["model.layers.1.mlp.up_proj.weight"].rel_change is None
    assert d.params["model.layers.1.mlp.up_proj.weight"].shape_b == (3, 3)


@pytest.mark.parametrize("suffix", [".safetensors", ".pt", ".bin"])
def test_checkpoint_files(tmp_path: Path, suffix: str) -> None:
    a, _, _ = build("timm-resnet18")
    path = tmp_path / f"weights{suffix}"
    sd = {k: v.clone().contiguous() for k, v in a.state_dict().items()}
    sd["fc.bias"] = sd["fc.bias"] + 1
    if suffix == ".safetensors":
        save_file(sd, str(path))
    else:
        torch.save(sd, path)
    d = tx.diff(a, path)
    assert d.source == "checkpoint" and d.label == str(path)
    assert {n for n, c in d.params.items() if c.kind != "same"} == {"fc.bias"}
    assert d.params["fc.bias"].rel_change == pytest.approx(_rel(a.fc.bias, sd["fc.bias"]))
    assert d.params["bn1.num_batches_tracked"].kind == "same"


def test_meta_model_compares_shapes_and_dtypes_only() -> None:
    real, _, _ = build("hf-gpt2")
    with torch.device("meta"):
        meta = type(real)(real.config)
    d = tx.diff(meta, real)
    assert d.params and all(c.rel_change is None for c in d.params.values())
    assert {c.kind for c in d.params.values()} == {"same"}
    sd = real.state_dict()
    sd["lm_head.weight"] = torch.zeros(1, 1)
    sd["transformer.ln_f.bias"] = sd["transformer.ln_f.bias"].half()
    d = tx.diff(meta, sd)
    assert d.params["lm_head.weight"].kind == "shape"
    assert d.params["transformer.ln_f.bias"].kind == "dtype"
    assert d.params["transformer.ln_f.weight"].kind == "same"


def test_a_large_checkpoint_is_read_one_tensor_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 16 tensors of one size: the file is 16x its biggest tensor.
    model = nn.Sequential(*[nn.Linear(64, 64, bias=False) for _ in range(16)])
    path = tmp_path / "big.safetensors"
    save_file({k: v + 1 for k, v in model.state_dict().items()}, str(path))
    biggest = max(v.numel() * v.element_size() for v in model.state_dict().values())
    assert path.stat().st_size > 10 * biggest

    live: list[int] = []
    peak = [0]
    load = checkpoint.SafetensorsSource.load

    def counted(self: checkpoint.SafetensorsSource, name: str) -> torch.Tensor:
        t = load(self, name)
        live.append(1)
        peak[0] = max(peak[0], len(live))
        weakref.finalize(t, live.pop)
        return t

    monkeypatch.setattr(checkpoint.SafetensorsSource, "load", counted)
    d = tx.diff(model, path)
    assert {c.kind for c in d.params.values()} == {"values"} and len(d.params) == 16
    assert peak[0] == 1 and live == []  # never two checkpoint tensors alive at once
    peak[0] = 0
    with torch.device("meta"):
        meta = nn.Sequential(*[nn.Linear(64, 64, bias=False) for _ in range(16)])
    assert {c.kind for c in tx.diff(meta, path).params.values()} == {"same"}
    assert peak[0] == 0  # shapes and dtypes come from the header: no tensor read


def test_bad_inputs_give_clear_errors_and_change_nothing(tmp_path: Path) -> None:
    a, _, _ = build("timm-resnet18")
    before = _state(a)
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError, match="is not a readable safetensors file"):
        tx.diff(a, corrupt)
    truncated = tmp_path / "truncated.pt"
    torch.save(a.state_dict(), truncated)
    truncated.write_bytes(truncated.read_bytes()[:1000])
    with pytest.raises(ValueError, match="could not be read as a torch checkpoint"):
        tx.diff(a, truncated)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(pickle.dumps([1, 2]) + b"junk")
    with pytest.raises(ValueError, match=r"is not a torch checkpoint \(Unsupported operand"):
        tx.diff(a, garbage)
    hostile = tmp_path / "objects.pt"
    torch.save({"model": a.state_dict(), "opt": _Opaque()}, hostile)
    with pytest.raises(
        ValueError, match=r"objects \(test_diff._Opaque\).*never unpickles arbitrary objects"
    ):
        tx.diff(a, hostile)
    training = tmp_path / "training.pt"
    torch.save({"epoch": 3, "model": a.state_dict()}, training)
    with pytest.raises(ValueError, match=r"other keys.*'epoch' \(int\).*under 'model'"):
        tx.diff(a, training)
    prefixed = {f"module.{k}": v for k, v in a.state_dict().items()}
    with pytest.raises(ValueError, match="shares no tensor name.*prefix 'module.': strip it"):
        tx.diff(a, prefixed)
    with pytest.raises(FileNotFoundError, match="no checkpoint file at"):
        tx.diff(a, tmp_path / "nowhere.safetensors")
    with pytest.raises(TypeError, match="b must be a model, a state_dict"):
        tx.diff(a, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a must be an nn.Module"):
        tx.diff(a.state_dict(), a)  # type: ignore[arg-type]
    assert _unchanged(a, before)


def test_rel_change_edge_cases() -> None:
    from torchxray._compare.values import compare

    zero = torch.zeros(4)
    assert compare(zero, zero) == (True, 0.0)
    assert compare(zero, torch.ones(4)) == (False, math.inf)
    nan = torch.tensor([1.0, float("nan")])
    assert compare(nan, nan.clone()) == (True, 0.0)  # NaN at the same place is no change
    big = torch.randn(1000, 7)
    other = big + 0.1
    for chunk in (3, 7, 1000, 10**6):  # chunk bounds never change the figure
        same, rel = compare(big, other, chunk)  # type: ignore[misc]
        assert not same and rel == pytest.approx(_rel(big, other), rel=1e-12)
    assert compare(big.t(), other.t().contiguous(), 5)[1] == pytest.approx(_rel(big, other))  # type: ignore[index]


class _Opaque:
    pass


def test_a_model_with_lazy_layers_never_called_is_refused_in_a_sentence() -> None:
    # Issue 58 (held-out keras_lazy): reading an uninitialised parameter's shape raised inside
    # torch ("Can't access the shape of an uninitialized parameter").
    model = nn.Sequential(nn.Flatten(), nn.LazyLinear(4))
    with pytest.raises(ValueError, match=r"in a, 1\.weight, 1\.bias are uninitialised.*diff\(\)"):
        tx.diff(model, copy.deepcopy(model))
    model(torch.randn(2, 3))  # the person's own first forward initialises them
    assert tx.diff(model, copy.deepcopy(model)).params["1.weight"].kind == "same"
