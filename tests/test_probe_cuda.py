"""Shape probe on a CUDA model: time, memory, OOM, clean-up. Skips without a GPU."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from torch import nn
from torch.nn.modules import module as nn_module

from torchxray.probe import TensorInfo, probe

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MIB = 2**20


class Spike(nn.Module):
    """Allocates a 64 MiB temporary, frees it, and returns something small."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tmp = torch.empty(64 * MIB, dtype=torch.uint8, device=x.device)
        del tmp
        return x * 2


def _model() -> nn.Sequential:
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), Spike(), nn.Linear(512, 8)).cuda()


def _settle() -> int:
    gc.collect()  # a model an earlier test left in a cycle or a traceback is freed now, not mid-test
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


@pytest.fixture(autouse=True)
def _cublas_workspaces() -> Iterator[None]:
    """The first matrix products in a process allocate cuBLAS's and cuBLASLt's workspaces (32 MiB
    and 1 MiB on an H200) through PyTorch's allocator and keep them: run the tests' model once
    before any test takes its `before`."""
    with torch.no_grad():
        _model()(torch.randn(64, 256, device="cuda")).sum().item()
    yield


def _allocations(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """`fn()`, and each device allocation made during it as "bytes <- Python frames" (for an
    assertion's message: the allocator's own record says who asked)."""
    torch.cuda.memory._record_memory_history(max_entries=10_000, stacks="python")
    try:
        out = fn()
        snap = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    made = []
    for trace in snap.get("device_traces", []):
        for ev in trace:
            if ev.get("action") == "alloc":
                frames = [f"{f['filename']}:{f['line']} {f['name']}" for f in ev.get("frames", [])]
                made.append(f"{ev.get('size')} <- " + " <- ".join(frames[:12]))
    return out, made


def test_real_mode_on_cuda_times_memory_and_stays_there() -> None:
    model = _model()
    x = torch.randn(64, 256)  # on the CPU: the probe moves it to the model's device
    before = _settle()
    rep = probe(model, x, mode="real")
    assert rep.ok and rep.device == "cuda:0"
    assert all(p.device.type == "cuda" for p in model.parameters()) and x.device.type == "cpu"
    assert rep["0"].inputs[0] == TensorInfo((64, 256), "float32", "cuda:0", "args[0]")
    for rec in rep.records.values():
        assert rec.time_ms is not None and rec.time_ms >= 0
        assert rec.mem_alloc is not None and rec.mem_peak is not None and rec.mem_peak >= 0
    assert rep[""].time_ms >= rep["0"].time_ms  # type: ignore[operator]
    assert rep["2"].mem_peak >= 64 * MIB and rep[""].mem_peak >= 64 * MIB  # type: ignore[operator]
    assert rep["2"].mem_alloc < 64 * MIB  # type: ignore[operator]  # the temporary was freed
    assert rep["0"].mem_alloc >= 64 * 512 * 4  # type: ignore[operator]  # its output is held
    assert _settle() == before  # intermediate tensors released


def test_fake_mode_on_cuda_allocates_nothing() -> None:
    model = _model()
    before = _settle()
    torch.cuda.reset_peak_memory_stats()
    x = torch.empty(2**20, 256, device="meta")  # a 1 GiB input, never real
    rep, made = _allocations(lambda: probe(model, x))
    assert rep.ok and rep["3"].outputs[0] == TensorInfo((2**20, 8), "float32", "cuda:0", "")
    # FakeTensorMode makes one 4-byte tensor (a 512-byte block) to start the device's context
    # (torch's `init_gpu_context`); nothing else may touch the device.
    assert not [m for m in made if "init_gpu_context" not in m], made
    assert torch.cuda.max_memory_allocated() - before <= 512 and _settle() == before


def test_simulated_oom_becomes_a_failed_report(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    hooks = [dict(m._forward_hooks) for m in model.modules()]
    glob = dict(nn_module._global_forward_hooks), dict(nn_module._global_forward_pre_hooks)

    def oom(x: torch.Tensor) -> torch.Tensor:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    monkeypatch.setattr(model[2], "forward", oom)
    before = _settle()
    rep = probe(model, torch.randn(8, 256), mode="real")
    assert not rep.ok and rep.error is not None and rep.error.path == "2"
    assert "OutOfMemoryError" in rep.error.exc_type and rep.error.input_shapes == ((8, 512),)
    assert rep["0"].complete and rep["0"].time_ms is not None
    assert [dict(m._forward_hooks) for m in model.modules()] == hooks
    assert (
        dict(nn_module._global_forward_hooks),
        dict(nn_module._global_forward_pre_hooks),
    ) == glob
    assert _settle() == before and torch.is_grad_enabled()


def test_real_oom_is_caught_named_and_memory_freed() -> None:
    class Greedy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            keep = x.repeat(1024, 1)  # held until the failure unwinds
            return keep + torch.empty(2**50, dtype=torch.uint8, device=x.device).sum()

    model = nn.Sequential(nn.Linear(256, 256), Greedy()).cuda()
    before = _settle()
    rep = probe(model, torch.randn(64, 256), mode="real")
    assert not rep.ok and rep.error is not None and rep.error.path == "1"
    assert "OutOfMemoryError" in rep.error.exc_type and "fake" in rep.error.hint
    assert _settle() == before
    assert model.training is True


def test_keyboard_interrupt_on_cuda_cleans_up_and_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model().train()

    def stop(x: torch.Tensor) -> torch.Tensor:
        raise KeyboardInterrupt

    monkeypatch.setattr(model[3], "forward", stop)
    before = _settle()
    with pytest.raises(KeyboardInterrupt):
        probe(model, torch.randn(8, 256), mode="real")
    assert _settle() == before and all(m.training for m in model.modules())
    assert not nn_module._global_forward_hooks and not nn_module._global_forward_pre_hooks


def test_each_probe_hands_its_cache_back_and_collects_garbage_only_after_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    collections: list[int] = []
    collect = gc.collect

    def counted(*args: Any) -> int:
        collections.append(1)
        return collect(*args)

    monkeypatch.setattr(gc, "collect", counted)
    model = _model()
    x = torch.randn(64, 256)
    with torch.no_grad():
        model(x.cuda())  # as a user's own forward leaves it: the cache holds Spike's 64 MiB
    before = _settle()
    reserved = torch.cuda.memory_reserved()
    assert reserved >= 64 * MIB
    n = len(collections)
    assert probe(model, x, mode="real").ok
    assert len(collections) == n  # a full collection costs more than a large model's forward
    torch.cuda.synchronize()
    # Before any collection: nothing of the run waits in a reference cycle for one.
    assert torch.cuda.memory_allocated() == before
    assert torch.cuda.memory_reserved() <= reserved - 64 * MIB

    def oom(x: torch.Tensor) -> torch.Tensor:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")

    monkeypatch.setattr(model[3], "forward", oom)
    n = len(collections)
    assert not probe(model, x, mode="real").ok
    assert len(collections) == n + 1
    assert _settle() == before
