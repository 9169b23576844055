"""tx.watch on an FSDP2 model (DTensor parameters, a 4-rank fake process group in one process): the
watch reads each weight's local shard and issues no collective of its own (a step watched issues
the very collectives of a bare one), and a NaN is named without running the step again (which
would all-gather on one rank alone), saying so. Before, the first sampled step raised
(".tolist() is not supported for tensor subclasses, got DTensor")."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

import torchxray as tx


def _fsdp(mesh: Any) -> tuple[nn.Module, Any]:
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _step(model: nn.Module, opt: Any, w: Any = None, x: torch.Tensor | None = None) -> None:
    opt.zero_grad()
    loss = model(torch.randn(4, 8) if x is None else x).pow(2).mean()
    loss.backward()
    opt.step()
    if w is not None:
        w.step(loss)


def test_a_watched_fsdp2_step_issues_the_collectives_of_a_bare_one(mesh: Any) -> None:
    from torch.distributed.tensor.debug import CommDebugMode

    model, opt = _fsdp(mesh)
    _step(model, opt)
    with CommDebugMode() as bare:
        _step(model, opt)
    with tx.watch(model, opt, every=1) as w:  # every step sampled: norms, update ratio, activations
        with CommDebugMode() as watched:
            _step(model, opt, w)
        local = {
            path: math.sqrt(
                sum(
                    float(p.grad._local_tensor.norm()) ** 2
                    for p in model.get_submodule(path).parameters()
                )
            )  # fmt: skip
            for path in ("0", "2")
        }
        got = w.latest("grad_norm")
    assert watched.get_comm_counts() == bare.get_comm_counts()
    assert sum(bare.get_comm_counts().values()) > 0  # the counter sees FSDP2's own
    for path, norm in local.items():
        assert got[path] == pytest.approx(norm, rel=1e-5)
    assert w.latest("update_ratio")["0"] > 0


def test_a_nan_in_a_sharded_model_is_named_without_a_replay(mesh: Any) -> None:
    model, opt = _fsdp(mesh)
    with tx.watch(model, opt, every=10, check_every_step=True) as w:
        _step(model, opt, w)
        x = torch.randn(4, 8)
        with torch.no_grad():
            model[2].bias._local_tensor.fill_(float("nan"))
        _step(model, opt, x=x)
    nf = w.nonfinite
    assert nf is not None and nf.step == 2 and nf.phase == "backward" and nf.path == "2"
    assert "not run again" in nf.detail
