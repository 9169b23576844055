"""tx.ranks counts each module's collectives as torch's own CommDebugMode does (issue 55): per
module, phase and op, its own calls (``plan[path].comms``) and those with every module that ran
inside it (``plan[path].comms_total``), for a tensor-parallel plan, the 2-D plan of the issue
(colwise attn.q/k/v and mlp.up, rowwise attn.o and mlp.down over "tp", FSDP2 over "dp"), a
sequence-parallel one (torchtitan's Llama recipe) and FSDP2 alone. CommDebugMode runs the same
parallelize function on rank 0 of torch's fake process group, real tensors, forward and backward of
the same loss as the plan's step."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from fixtures.ranks import fsdp, tiny_llama, titan, tokens
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.nn.modules.module import register_module_forward_pre_hook
from torch.testing._internal.distributed.fake_pg import FakeStore

import torchxray as tx
from torchxray._ranks.meter import COLLECTIVES, op_name
from torchxray._ranks.step import _loss

Counts = Counter[tuple[str, str, str]]  # (path, phase, op) -> calls


class Attn(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (
            m(x).view(b, t, self.heads, -1).transpose(1, 2) for m in (self.q, self.k, self.v)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class Mlp(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.mlp = Attn(d, heads), Mlp(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class Net(nn.Module):
    def __init__(self, d: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.emb = nn.Linear(d, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.emb(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _tp_block(block: nn.Module, tp: Any) -> None:
    colwise, rowwise = ColwiseParallel(), RowwiseParallel()
    names = {"attn.q": colwise, "attn.k": colwise, "attn.v": colwise, "mlp.up": colwise}
    parallelize_module(block, tp, {**names, "attn.o": rowwise, "mlp.down": rowwise})


def tp_only(model: nn.Module, mesh: Any) -> nn.Module:
    for block in model.blocks:
        _tp_block(block, mesh)
    return model


def two_d(model: nn.Module, mesh: Any) -> nn.Module:
    for block in model.blocks:
        _tp_block(block, mesh["tp"])
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    return model


def per_layer(model: nn.Module, mesh: Any) -> nn.Module:
    fully_shard(model[0], mesh=mesh)
    fully_shard(model[2], mesh=mesh)
    return model


def _ours(plan: Any) -> tuple[Counts, Counts]:
    own: Counts = Counter()
    total: Counts = Counter()
    for rec in plan:
        for counts, comms in ((own, rec.comms), (total, rec.comms_total)):
            for c in comms:
                if c.phase in ("forward", "backward"):
                    counts[(rec.path, c.phase, c.op)] += c.count
    return own, total


def _theirs(
    model: nn.Module, parallelize: Callable[..., Any], mesh: dict[str, int], args: tuple[Any, ...]
) -> tuple[Counts, Counts]:
    """CommDebugMode's module-level counts (inclusive) and each module's own (the collectives
    among the ops it logs under the module's name), on rank 0 of a fake world."""
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
    try:
        device_mesh = init_device_mesh("cpu", tuple(mesh.values()), mesh_dim_names=tuple(mesh))
        sharded = parallelize(copy.deepcopy(model), device_mesh)
        cdm = CommDebugMode()
        # Each module outside the model's tree gets a name of its own before CommDebugMode's
        # tracker meets it (its pre-hook runs after this one). The tracker names such a module by
        # its class and keys its forward-hook handles by name, so two instances of one class (the
        # `kernels` package's `Func` modules transformers >= 5.25 calls in every attention) lose
        # all but the last hook: its stack keeps a stale entry and the backward's first
        # collectives go to whichever module it names (torch warns "module hierarchy tracking
        # maybe be messed up").
        known, tree = cdm.advanced_module_tracker._known_modules, set(sharded.modules())

        def name_outside(mod: nn.Module, args: Any) -> None:
            if mod not in tree:
                known.setdefault(mod, f"{type(mod).__name__}#{id(mod)}")

        outside = register_module_forward_pre_hook(name_outside)
        try:
            with cdm:
                _loss(sharded(*args)).backward()
        finally:
            outside.remove()
    finally:
        dist.destroy_process_group()
    names = [n for n in cdm.comm_module_counts if n != "Global"]
    root = type(sharded).__name__  # CommDebugMode names the root by its class, the rest under it

    def path(name: str) -> str:
        return "" if name == root else name[len(root) + 1 :]

    total: Counts = Counter()
    for name in names:
        for phase in ("forward", "backward"):
            for op, n in cdm.comm_module_counts[name][phase].items():
                total[(path(name), phase, op_name(op))] += n
    own: Counts = Counter()
    for name, ops in cdm.comm_module_operation_counts.items():
        for op in ops["operations_list"]:
            if name != "Global" and op["name"]._overloadpacket in COLLECTIVES:
                own[
                    (path(name), "backward" if op["is_bw"] else "forward", op_name(op["name"]))
                ] += 1
    return own, total


def _differ(ours: Counts, theirs: Counts) -> list[str]:
    keys = sorted(k for k in set(ours) | set(theirs) if ours[k] or theirs[k])
    return [f"{k}: plan {ours[k]}, CommDebugMode {theirs[k]}" for k in keys if ours[k] != theirs[k]]


CASES = {
    "tensor parallel": (lambda: Net(), tp_only, {"tp": 4}, lambda: (torch.randn(2, 8, 32),)),
    "2-D: TP then FSDP2": (lambda: Net(), two_d, {"dp": 2, "tp": 2}, lambda: (torch.randn(2, 8, 32),)),
    "FSDP2 per layer": (
        lambda: nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 8)),
        per_layer,
        {"dp": 4},
        lambda: (torch.randn(4, 32),),
    ),
    "sequence parallel (torchtitan's Llama)": (tiny_llama, titan, {"dp": 2, "tp": 2}, lambda: (tokens(),)),
    "FSDP2 (Llama)": (tiny_llama, fsdp, {"dp": 4}, lambda: (tokens(),)),
}  # fmt: skip


@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_modules_collectives_are_commdebugmodes(case: str) -> None:
    build, parallelize, mesh, inputs = CASES[case]
    torch.manual_seed(0)
    model = build()
    args = inputs()
    plan = tx.ranks(model, parallelize, mesh=mesh, args=args)
    own, total = _ours(plan)
    their_own, their_total = _theirs(model, parallelize, mesh, args)
    assert sum(their_total.values()) > 0
    assert not _differ(own, their_own), _differ(own, their_own)
    assert not _differ(total, their_total), _differ(total, their_total)


def test_a_rowwise_output_all_reduce_is_its_modules_and_each_colwise_input_gradient_its_own() -> (
    None
):
    """The two counts of the issue, by name: the forward all-reduce of each rowwise linear is
    attn.o's / mlp.down's, and the backward all-reduces of q, k and v's input gradients are one each."""
    torch.manual_seed(0)
    plan = tx.ranks(Net(), two_d, mesh={"dp": 2, "tp": 2}, args=(torch.randn(2, 8, 32),))
    for block in ("blocks.0", "blocks.1"):
        for path, phase in (("attn.o", "forward"), ("mlp.down", "forward"), ("attn.q", "backward"),
                            ("attn.k", "backward"), ("attn.v", "backward"), ("mlp.up", "backward")):  # fmt: skip
            got = [
                (c.op, c.count, c.mesh_dim)
                for c in plan[f"{block}.{path}"].comms
                if c.phase == phase
            ]
            assert got == [("all_reduce", 1, "tp")], (block, path, phase, got)
        assert not [c for c in plan[f"{block}.attn"].comms if c.op == "all_reduce"]
