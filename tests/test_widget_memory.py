"""The Memory tab's kernel side through `Session.handle`: the "memory" request (a subtree's bytes in
a fake forward or training step, cached per options until the model changes, the devices present),
the "figures" request that colours the tree, and the rows' placement and "not called"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from fixtures.real import LLAMA_DISK_MAP, build
from torch import nn

import torchxray as tx
from torchxray._view import tools_memory
from torchxray._view.session import Session


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Sequential(nn.Linear(128, 10)))


def _session(model: nn.Module | None = None, *args: Any, **kwargs: Any) -> Session:
    if model is None:
        model, args = _mlp(), (torch.randn(8, 64),)
    s = Session(model, args, kwargs)
    s.run_probe()
    return s


def _ok(reply: Any) -> dict[str, Any]:
    assert reply["kind"] != "error", reply
    return dict(reply)


def test_memory_of_a_training_step_matches_tx_memory_for_the_subtree() -> None:
    s = _session()
    reply = _ok(s.handle({"kind": "memory", "path": "2", "training": True})[0])
    want = tx.memory(s.model, *s.args, training=True, optimizer="adamw")  # type: ignore[arg-type]
    w = 4 * (128 * 10 + 10)
    assert reply["path"] == "2" and reply["training"] and reply["optimizer"] == "adamw"
    assert (reply["params"], reply["grads"], reply["optimizer_state"]) == (w, w, 2 * w)
    assert reply["activations"] == want["2"].activations  # ReLU's output: charged to "1"
    relu = _ok(s.handle({"kind": "memory", "path": "1", "training": True})[0])
    assert relu["activations"] == want["1"].activations == 4 * 8 * 128
    assert reply["model_peak"] == want.peak and reply["note"] == ""
    assert reply["dtypes"] == ["float32"] and reply["device"] == "cpu"
    sgd = _ok(s.handle({"kind": "memory", "path": "2", "training": True, "optimizer": "sgd"})[0])
    assert sgd["optimizer_state"] == w  # momentum: one tensor per parameter
    none = _ok(s.handle({"kind": "memory", "training": True, "optimizer": "none"})[0])
    assert none["optimizer_state"] == 0 and none["grads"] == none["params"]


def test_inference_has_no_grads_optimizer_or_activations_and_says_why() -> None:
    s = _session()
    reply = _ok(s.handle({"kind": "memory", "optimizer": "adam"})[0])
    assert reply["optimizer"] == "none"  # the optimizer choice applies to training only
    assert reply["grads"] == reply["optimizer_state"] == reply["activations"] == 0
    assert reply["params"] == 4 * (64 * 128 + 128 + 128 * 10 + 10)
    assert "inference" in reply["note"] and reply["model_peak"] >= reply["params"]


def test_devices_present_include_the_hosts_ram() -> None:
    s = _session()
    devices = _ok(s.handle({"kind": "memory"})[0])["devices"]
    ram = [d for d in devices if d["name"] == "CPU RAM"]
    assert len(ram) == 1 and ram[0]["bytes"] > 2**20
    assert len(devices) == 1 + (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_reports_are_cached_per_options_until_the_model_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = _session()
    calls: list[tuple[bool, Any]] = []
    real = tools_memory.memory

    def counting(model: nn.Module, *args: Any, **kwargs: Any) -> Any:
        calls.append((kwargs["training"], kwargs["optimizer"]))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(tools_memory, "memory", counting)
    for path in ("", "0", "2.0", ""):
        _ok(s.handle({"kind": "memory", "path": path, "training": True})[0])
    _ok(s.handle({"kind": "memory", "path": "0"})[0])
    _ok(s.handle({"kind": "figures", "figure": "activations", "paths": ["0"]})[0])
    assert calls == [(True, "adamw"), (False, None)]  # figures reuse the training report
    before = _ok(s.handle({"kind": "memory", "path": "2", "training": True})[0])
    patched = s.handle({"kind": "edit", "path": "2.0", "changes": {"out_features": "20"}})[0]
    assert patched["kind"] == "patched"
    after = _ok(s.handle({"kind": "memory", "path": "2", "training": True})[0])
    assert calls[-1] == (True, "adamw") and len(calls) == 3
    assert after["params"] == 2 * before["params"]  # 10 -> 20 outputs: measured anew


def test_bad_memory_requests_get_clear_errors_and_change_nothing() -> None:
    s = _session()
    state = {k: v.clone() for k, v in s.model.state_dict().items()}  # type: ignore[union-attr]
    bad = s.handle({"kind": "memory", "training": True, "optimizer": "lion"})[0]
    assert bad["kind"] == "error" and "'adamw'" in bad["message"] and "lion" in bad["message"]
    missing = s.handle({"kind": "memory", "path": "2.1"})[0]
    assert missing["kind"] == "error" and "2.1" in missing["message"]
    no_inputs = Session(_mlp()).handle({"kind": "memory"})[0]
    assert no_inputs["kind"] == "error" and "example inputs" in no_inputs["message"]
    now = s.model.state_dict()  # type: ignore[union-attr]
    assert all(torch.equal(now[k], v) for k, v in state.items())
    assert all(p.device.type == "cpu" and p.grad is None for p in s.model.parameters())  # type: ignore[union-attr]


def test_figures_come_for_the_paths_asked_only() -> None:
    s = _session()
    params = _ok(s.handle({"kind": "figures", "figure": "params", "paths": ["0", "2.0", "9"]})[0])
    assert params["values"] == {"0": 64 * 128 + 128, "2.0": 1290, "9": None}
    assert params["total"] == sum(p.numel() for p in s.model.parameters())  # type: ignore[union-attr]
    size = _ok(s.handle({"kind": "figures", "figure": "bytes", "paths": ["2"]})[0])
    assert size["values"] == {"2": 4 * 1290} and size["total"] == 4 * params["total"]
    flops = _ok(s.handle({"kind": "figures", "figure": "flops", "paths": ["0", "1"]})[0])
    assert flops["values"]["0"] == 2 * 8 * 64 * 128 and flops["total"] >= flops["values"]["0"]
    acts = _ok(s.handle({"kind": "figures", "figure": "activations", "paths": ["1", "2"]})[0])
    rep = tx.memory(s.model, *s.args, training=True, optimizer="adamw")  # type: ignore[arg-type]
    assert acts["values"] == {"1": rep["1"].activations, "2": rep["2"].activations}
    assert acts["total"] == rep.activations > 0
    time = _ok(s.handle({"kind": "figures", "figure": "time", "paths": ["0"]})[0])
    assert time["values"] == {"0": None} and "real probe" in time["note"]
    s.run_probe("real")
    real = _ok(s.handle({"kind": "figures", "figure": "time", "paths": ["0"]})[0])
    assert real["values"]["0"] is not None and real["values"]["0"] >= 0 and real["note"] == ""
    bad = s.handle({"kind": "figures", "figure": "params", "paths": "0"})[0]
    assert bad["kind"] == "error" and "list of strings" in bad["message"]


def test_rows_and_overview_say_why_a_module_was_not_called() -> None:
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True).eval()
    s = _session(nn.Sequential(layer), torch.randn(2, 5, 16))
    kids = s.handle({"kind": "children", "path": "0"})[0]
    rows = {r["path"]: r for r in kids["items"]}  # type: ignore[typeddict-item]
    assert "fast path" in rows["0.self_attn"]["not_called"]
    assert "out" not in rows["0.self_attn"]
    s.handle({"kind": "select", "path": "0.linear1"})
    assert "fast path" in (s.overview()["not_called"] or "")
    plain = _session()
    top = plain.handle({"kind": "children", "path": ""})[0]["items"]  # type: ignore[typeddict-item]
    assert all("not_called" not in r and "placement" not in r for r in top)


def test_offloaded_rows_carry_their_placement(tmp_path: Path) -> None:
    accelerate = pytest.importorskip("accelerate")
    model, args, kwargs = build("hf-llama")
    device_map = LLAMA_DISK_MAP
    accelerate.dispatch_model(model, device_map=device_map, offload_dir=str(tmp_path / "off"))
    s = _session(model, *args, **kwargs)
    rows = {
        r["path"]: r for r in s.handle({"kind": "children", "path": "model.layers.1"})[0]["items"]
    }  # type: ignore[typeddict-item]
    assert rows["model.layers.1.self_attn"]["placement"] == "offloaded: disk (runs on cpu)"
    assert "placement" not in rows["model.layers.1.mlp"]  # plain CPU, like everything else
    s.handle({"kind": "select", "path": "model.layers.1.self_attn"})
    o = s.overview()
    assert (
        o["placement"] == "offloaded: disk (runs on cpu)" and o["bytes_local"] == o["bytes_total"]
    )
    mem = _ok(s.handle({"kind": "memory", "path": "model.layers.1", "training": True})[0])
    assert mem["params"] > 0 and mem["activations"] > 0


@pytest.mark.parametrize("name", ["timm-resnet18", "hf-gpt2"])
def test_memory_request_on_real_models(name: str) -> None:
    model, args, kwargs = build(name)
    s = _session(model, *args, **kwargs)
    reply = _ok(s.handle({"kind": "memory", "training": True})[0])
    want = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
    assert reply["params"] == want.params + want.buffers
    assert (reply["grads"], reply["optimizer_state"]) == (want.grads, want.optimizer)
    assert reply["activations"] == want.activations and reply["model_peak"] == want.peak
