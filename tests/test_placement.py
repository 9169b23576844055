"""Placement on the tree (`Node.placement`, `Node.bytes_local`) and fake probes that respect it:
accelerate's CPU and disk offload (hooks stay, offloaded weights are neither read nor moved) and
FSDP2 / DTensor sharding on a fake process group of four ranks, all on the CPU."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from fixtures.real import LLAMA_DISK_MAP, build
from torch import nn

import torchxray as tx
from torchxray._view.panes import overview

accelerate = pytest.importorskip("accelerate")

DISK_MAP = LLAMA_DISK_MAP  # layer 1's attention on disk, the rest on the CPU


class _Reads:
    """Counts reads of accelerate's offloaded weights (disk loader and CPU state dicts)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from accelerate.utils import offload

        self.count = 0
        for cls in (offload.OffloadedWeightsLoader, offload.PrefixedDataset):
            original = cls.__getitem__

            def spy(obj: Any, key: str, _original: Any = original) -> Any:
                self.count += 1
                return _original(obj, key)

            monkeypatch.setattr(cls, "__getitem__", spy)


def _hooks(model: nn.Module) -> dict[str, tuple[Any, bool]]:
    return {
        p: (m._hf_hook, getattr(m._hf_hook, "offload", None))
        for p, m in model.named_modules()
        if hasattr(m, "_hf_hook")
    }


def _weights(model: nn.Module) -> dict[str, tuple[int, str]]:
    """Each weight's object identity and device."""
    return {n: (id(t), str(t.device)) for n, t in model.state_dict(keep_vars=True).items()}


def test_plain_modules_read_their_device_and_hold_all_their_bytes() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 2)))
    tree = tx.walk(model)
    assert [n.placement for n in tree] == ["cpu"] * 5
    assert all(n.bytes_local == n.bytes_total for n in tree)
    with torch.device("meta"):
        meta = nn.Linear(4, 4)
    assert tx.walk(meta).root.placement == "meta"


@pytest.fixture
def disk_llama(tmp_path: Path) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any], Path]:
    model, args, kwargs = build("hf-llama")
    folder = tmp_path / "offload"
    accelerate.dispatch_model(model, device_map=DISK_MAP, offload_dir=str(folder))
    return model, args, kwargs, folder


def test_disk_offload_shows_on_the_tree_with_the_execution_device(disk_llama: Any) -> None:
    model, _, _, _ = disk_llama
    tree = tx.walk(model)
    attn = tree["model.layers.1.self_attn"]
    assert attn.devices == ("meta",)
    assert attn.placement == "offloaded: disk (runs on cpu)"
    assert tree["model.layers.1.self_attn.q_proj"].placement == "offloaded: disk (runs on cpu)"
    assert tree["model.layers.1.mlp.up_proj"].placement == "cpu"
    assert tree["model.layers.1"].placement == "cpu; offloaded: disk (runs on cpu)"
    assert tree["model.layers.0"].placement == "cpu"
    row = overview(attn, None)
    assert row["placement"] == attn.placement and row["bytes_local"] == attn.bytes_total


def test_fake_probe_runs_a_disk_offloaded_model_without_loading_a_weight(
    disk_llama: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, args, kwargs, _ = disk_llama
    hooks, weights = _hooks(model), _weights(model)
    reads = _Reads(monkeypatch)
    rep = tx.probe(model, *args, **kwargs)
    assert rep.ok, rep.error
    assert reads.count == 0  # nothing was read from the offload folder
    assert rep["model.layers.1.input_layernorm"].output_shapes == ((2, 8, 64),)
    assert rep["lm_head"].output_shapes == ((2, 8, 128),)
    # Hooks, their offload flags and every weight (object and device) are as they were.
    assert _hooks(model) == hooks
    assert _weights(model) == weights
    assert model.model.layers[1].self_attn.q_proj.weight.is_meta
    real = tx.probe(model, *args, mode="real", **kwargs)
    assert real.ok and reads.count > 0  # the real probe does load them, through accelerate
    assert real["lm_head"].output_shapes == rep["lm_head"].output_shapes
    # accelerate puts new meta parameters back after a real forward: devices are what stays.
    assert {n: d for n, (_, d) in _weights(model).items()} == {
        n: d for n, (_, d) in weights.items()
    }


def test_missing_offload_folder_is_named_and_the_fake_probe_still_runs(disk_llama: Any) -> None:
    model, args, kwargs, folder = disk_llama
    shutil.rmtree(folder)
    tree = tx.walk(model)
    assert tree["model.layers.1.self_attn"].placement == (
        "offloaded: disk, folder missing (runs on cpu)"
    )
    assert tx.probe(model, *args, **kwargs).ok
    assert tx.memory(model, *args, **kwargs).params == tree.root.bytes_total - 64  # inv_freq


def test_cpu_offload_and_memory_of_an_offloaded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    model, args, kwargs = build("hf-llama")
    plain = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
    accelerate.cpu_offload(model, execution_device=torch.device("cpu"))
    tree = tx.walk(model)
    assert tree["model.layers.0.mlp"].placement == "offloaded: cpu (runs on cpu)"
    # The rotary table is a non-persistent buffer: cpu_offload keeps buffers on the device.
    assert tree.root.placement == "cpu; offloaded: cpu (runs on cpu)"
    weights = _weights(model)
    reads = _Reads(monkeypatch)
    assert tx.probe(model, *args, **kwargs).ok
    rep = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
    assert reads.count == 0 and _weights(model) == weights
    assert rep.device == "cpu"  # where the weights run, not the meta device they wait on
    for field in ("params", "grads", "optimizer", "activations"):
        assert getattr(rep, field) == getattr(plain, field), field


# -- FSDP2 / DTensor on a fake process group ------------------------------------------------------


@pytest.fixture
def fsdp_llama(mesh: Any) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    from torch.distributed.fsdp import fully_shard

    model, args, kwargs = build("hf-llama")
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, args, kwargs


def test_fsdp2_shards_show_with_their_mesh_unit_and_bytes_per_rank(fsdp_llama: Any) -> None:
    model, _, _ = fsdp_llama
    tree = tx.walk(model)
    q = tree["model.layers.0.self_attn.q_proj"]
    assert q.placement == "DTensor Shard(0) on mesh (4,); FSDP unit 'model.layers.0'"
    assert q.bytes_total == 64 * 64 * 4 and q.bytes_local == q.bytes_total // 4
    emb = tree["model.embed_tokens"]
    assert emb.placement == "DTensor Shard(0) on mesh (4,); FSDP unit (root)"
    assert tree["model.layers.1"].placement.endswith("FSDP unit 'model.layers.1'")
    # The rotary table is a plain CPU buffer, whole on every rank.
    root = tree.root
    assert root.placement == "cpu; DTensor Shard(0) on mesh (4,); FSDP unit (root)"
    assert root.bytes_local == (root.bytes_total - 64) // 4 + 64
    assert overview(q, None)["bytes_local"] == q.bytes_local


def test_fake_probe_runs_an_fsdp2_model_and_leaves_its_shards(fsdp_llama: Any) -> None:
    model, args, kwargs = fsdp_llama
    weights = _weights(model)
    rep = tx.probe(model, *args, **kwargs)
    assert rep.ok, rep.error
    assert rep["lm_head"].output_shapes == ((2, 8, 128),)
    assert rep["model.layers.0.self_attn.q_proj"].output_shapes == ((2, 8, 64),)
    assert _weights(model) == weights
    q = model.model.layers[0].self_attn.q_proj.weight
    assert q.to_local().shape == (16, 64)  # still sharded: nothing was left gathered


def test_memory_of_a_sharded_model_says_what_to_do_instead(fsdp_llama: Any) -> None:
    model, args, kwargs = fsdp_llama
    with pytest.raises(ValueError, match=r"DTensor parameters.*mesh \(4,\).*bytes_local"):
        tx.memory(model, *args, **kwargs)
