"""The real probe on an FSDP2 model (`fully_shard` on a 4-rank fake process group, CPU), and what a
fake probe leaves of FSDP's bookkeeping: nothing (`_probe.fsdp`).

A fake probe used to leave every unit marked as gathered, with fake gathered parameters, while
the sharded DTensors were back on the modules: the next real forward, the real probe's or the
user's own, failed with "mixed torch.Tensor and DTensor".
"""

from __future__ import annotations

from typing import Any

import torch
from fixtures.real import build
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor

import torchxray as tx


def _shard(model: nn.Module, units: list[nn.Module], mesh: Any) -> nn.Module:
    from torch.distributed.fsdp import fully_shard

    for unit in units:
        fully_shard(unit, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def _sharded(model: nn.Module) -> list[tuple[str, str, bool]]:
    """Each parameter's name, class, and whether anything fake hides in it."""
    out = []
    for name, p in model.named_parameters():
        local = getattr(p, "_local_tensor", p)
        out.append((name, type(p).__name__, isinstance(local, FakeTensor)))
    return out


def _fsdp_flags(model: nn.Module) -> list[tuple[str, str]]:
    from torch.distributed.fsdp import FSDPModule

    return [
        (type(m).__name__, str(g._sharded_state))
        for m in model.modules()
        if isinstance(m, FSDPModule)
        for g in m._get_fsdp_state()._fsdp_param_groups
    ]


def test_real_probe_after_a_fake_probe_runs_and_leaves_the_shards(mesh: Any) -> None:
    model, args, kwargs = build("hf-llama")
    inner: Any = model.model
    layers = inner.layers
    _shard(model, list(layers), mesh)
    params, flags = _sharded(model), _fsdp_flags(model)
    assert {cls for _, cls, _ in params} == {"DTensor"}
    fake = tx.probe(model, *args, **kwargs)
    assert fake.ok, fake.error
    assert _sharded(model) == params and _fsdp_flags(model) == flags
    real = tx.probe(model, *args, mode="real", **kwargs)
    assert real.ok, real.error
    for path in ("lm_head", "model.layers.1.mlp", "model.layers.0.self_attn.q_proj"):
        assert real[path].output_shapes == fake[path].output_shapes, path
    # Gathered units put back as they were: the root too, which FSDP keeps gathered after a
    # forward (for the backward), and which `tx.walk` would then show as plain tensors.
    assert _sharded(model) == params and _fsdp_flags(model) == flags
    assert tx.walk(model)["lm_head"].placement.startswith("DTensor Shard(0)")


def test_the_users_own_forward_after_a_fake_probe_still_gathers(mesh: Any) -> None:
    torch.manual_seed(0)
    model = _shard(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), [], mesh)
    x = torch.randn(2, 8)
    assert tx.probe(model, x).ok
    with torch.no_grad():
        assert model(x).shape == (2, 4)


def _hooks(model: nn.Module) -> int:
    return sum(
        len(m._state_dict_pre_hooks) + len(m._load_state_dict_pre_hooks) for m in model.modules()
    )


def test_fsdp_is_initialised_once_as_a_real_forward_would(mesh: Any) -> None:
    # FSDP's lazy initialisation (on the first forward) registers state-dict hooks on the units:
    # done for real before the fake run, and once, not again by every fake probe.
    torch.manual_seed(0)
    inner = nn.Linear(8, 6)
    model = _shard(nn.Sequential(inner, nn.ReLU(), nn.Linear(6, 3)), [inner], mesh)
    x = torch.randn(2, 8)
    assert tx.probe(model, x).ok
    hooks = _hooks(model)
    assert hooks > 0
    for _ in range(2):
        assert tx.probe(model, x).ok
    assert _hooks(model) == hooks
    assert not any(fake for _, _, fake in _sharded(model))
    real = tx.probe(model, x, mode="real")
    assert real.ok, real.error
    assert real["0"].output_shapes == ((2, 6),)
    assert _hooks(model) == hooks
