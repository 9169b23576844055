"""tx.ranks: shards, comms and memory of a sharded model on every rank, from a dry run on a fake
process group, checked against real gloo processes (world size 4 on this machine's CPUs)."""

from __future__ import annotations

import multiprocessing

import pytest
import torch
import torch.distributed as dist
from fixtures.ranks import dies_on_rank_2, fsdp, fsdp_tp, llama_of, tiny_llama, titan, tokens, whole
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module

import torchxray as tx
from torchxray._ranks.procs import RankDied

pytest.importorskip("transformers")


def _snapshot(model: nn.Module) -> dict[str, tuple[type, torch.Tensor]]:
    return {n: (type(t), t.detach().clone()) for n, t in model.state_dict(keep_vars=True).items()}


def _same(model: nn.Module, snap: dict[str, tuple[type, torch.Tensor]]) -> bool:
    now = model.state_dict(keep_vars=True)
    return now.keys() == snap.keys() and all(
        type(now[n]) is snap[n][0]
        and not isinstance(now[n], DTensor)
        and torch.equal(now[n].detach(), snap[n][1])
        for n in now
    )


@pytest.fixture(scope="module")
def llama() -> nn.Module:
    return tiny_llama()


def test_fsdp_over_four_ranks_has_uneven_shards_and_leaves_everything_as_found(llama):
    snap = _snapshot(llama)
    plan = tx.ranks(llama, fsdp, mesh={"dp": 4}, args=(tokens(),))
    assert plan.world_size == 4
    emb = plan["model.embed_tokens"]
    assert emb.cls == "Embedding"
    assert emb.placements == {"weight": "(Shard(dim=0),)"}
    assert emb.local_shapes["weight"] == {0: (63, 64), 1: (63, 64), 2: (63, 64), 3: (61, 64)}
    # rotary angles are a plain buffer: whole on every rank
    rot = plan["model.rotary_emb"].local_shapes["inv_freq"]
    assert set(rot.values()) == {(8,)} and len(rot) == 4
    assert _same(llama, snap) and not dist.is_initialized()
    assert not multiprocessing.active_children()


def test_fsdp_times_tp_places_both_mesh_dims(llama):
    plan = tx.ranks(llama, fsdp_tp, mesh={"dp": 2, "tp": 2}, args=(tokens(),))
    down = plan["model.layers.0.mlp.down_proj"]
    assert down.placements["weight"] == "(Shard(dim=0), Shard(dim=1))"
    assert down.mesh_dims["weight"] == ("dp", "tp")
    assert set(down.local_shapes["weight"].values()) == {
        (32, 65)
    }  # 64 x 130 over dp rows, tp columns
    # the rowwise layer's all-reduce runs on tp in forward, FSDP's collectives on dp
    dims = {(c.op, c.mesh_dim) for c in plan.comms}
    assert (
        ("all_reduce", "tp") in dims
        and ("all_gather", "dp") in dims
        and ("reduce_scatter", "dp") in dims
    )


def test_comm_bytes_are_the_tensors_sizes():
    model = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 8))

    def per_layer(m, mesh):
        fully_shard(m[0], mesh=mesh)
        fully_shard(m[2], mesh=mesh)

    plan = tx.ranks(model, per_layer, mesh={"dp": 4}, args=(torch.randn(4, 32),))
    gathered = [c for c in plan["0"].comms if c.op == "all_gather" and c.phase == "forward"]
    assert [c.count for c in gathered] == [1]
    exact = (32 * 16 + 16) * 4
    assert abs(gathered[0].bytes - exact) <= 0.01 * exact
    # the first layer's input needs no gradient: its reduce-scatter runs when the whole backward ends,
    # in the root's FSDP callback, charged as CommDebugMode charges it: to the module whose backward
    # began last, the first layer (tests/test_ranks_comm_debug.py)
    scattered = [c for c in plan["0"].comms if c.op == "reduce_scatter"]
    assert [c.phase for c in scattered] == ["backward"] and abs(
        scattered[0].bytes - exact
    ) <= 0.01 * exact


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("fn", "mesh"), [(fsdp, {"dp": 4}), (fsdp_tp, {"dp": 2, "tp": 2}), (titan, {"dp": 2, "tp": 2})]
)
def test_verify_on_gloo_matches_the_plan(llama, fn, mesh):
    snap = _snapshot(llama)
    plan = tx.ranks(llama, fn, mesh=mesh, args=(tokens(),))
    v = plan.verify(backend="gloo", timeout=240)
    assert v.ok, v.mismatches
    # the comparison is real: every planned shape was seen on its rank, comms were counted
    for path, rec in plan.records.items():
        for name, per_rank in rec.local_shapes.items():
            assert v.local_shapes[path][name] == per_rank
    assert all(v.comms[r] for r in range(4))
    assert all(abs(e) < 0.10 for e in v.memory_error.values())
    assert _same(llama, snap) and not dist.is_initialized()
    assert not multiprocessing.active_children()


@pytest.mark.timeout(120)
def test_a_rank_with_a_smaller_fsdp_shard_holds_the_padded_storage():
    # 10 rows over 4 ranks: rank 3 holds 1 row, in a storage of 3 (FSDP2 pads it), and its
    # gradient likewise; its optimizer state has the 1 row
    model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
    plan = tx.ranks(model, whole, mesh={"dp": 4}, args=(torch.randn(2, 16),))
    assert plan["0"].local_shapes["weight"][3] == (1, 16)
    assert plan.memory_parts[3].params == plan.memory_parts[0].params
    assert plan.memory_parts[3].optimizer < plan.memory_parts[0].optimizer
    v = plan.verify(timeout=60)
    assert v.ok, v.mismatches
    assert all(abs(e) < 0.02 for e in v.memory_error.values()), v.memory_error


def test_memory_has_every_part_on_every_rank(llama):
    plan = tx.ranks(llama, fsdp, mesh={"dp": 4}, args=(tokens(),))
    full = sum(p.numel() * 4 for p in llama.parameters())
    for r in range(4):
        part = plan.memory_parts[r]
        assert full / 4 * 0.9 < part.params < full / 4 * 1.1  # a quarter of the weights
        # AdamW's two moments have the rank's own shard sizes (FSDP2 pads parameters and
        # gradients to the largest shard, not the optimizer's state)
        own = sum(rec.bytes_on(r) for rec in plan)
        assert part.grads == part.params and part.optimizer == pytest.approx(2 * own, rel=0.01)
        assert (
            part.activations > 0
            and plan.memory[r] == part.peak >= part.params + part.grads + part.optimizer
        )


def test_a_users_process_group_stays_theirs():
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=1, world_size=2)
    try:
        theirs = dist.group.WORLD
        plan = tx.ranks(
            nn.Linear(8, 10), lambda m, mesh: fully_shard(m, mesh=mesh), mesh={"dp": 4}, step=False
        )
        assert plan[""].local_shapes["weight"][3] == (1, 8)
        assert dist.group.WORLD is theirs and dist.get_world_size() == 2 and dist.get_rank() == 1
    finally:
        dist.destroy_process_group()


def _raises(match: str, fn, mesh, model=None, **kw):
    model = model or nn.Sequential(nn.Linear(8, 8), nn.ReLU())
    snap = _snapshot(model)
    with pytest.raises(Exception, match=match):
        tx.ranks(model, fn, mesh=mesh, args=(torch.randn(2, 8),), **kw)
    assert (
        _same(model, snap) and not dist.is_initialized() and not multiprocessing.active_children()
    )


def test_bad_input_names_the_mesh_dim_or_module():
    _raises(
        "mesh dp=2 x tp=2 has 4 ranks but world_size is 8", fsdp, {"dp": 2, "tp": 2}, world_size=8
    )
    _raises(
        "mesh dimension 'pp', but the mesh has 'tp'",
        lambda m, mesh: fully_shard(m, mesh=mesh["pp"]),
        {"tp": 2},
    )
    _raises(
        "parallelize failed on module '1': NotImplementedError",
        lambda m, mesh: parallelize_module(m, mesh, {"1": ColwiseParallel()}),
        {"tp": 2},
    )

    def raises(m, mesh):
        raise ValueError("not today")

    _raises("parallelize failed on the root module: ValueError: not today", raises, {"dp": 2})


def test_a_plan_that_breaks_the_forward_names_the_module():
    model = nn.Sequential(
        nn.Linear(8, 6), nn.Linear(8, 4)
    )  # the second layer cannot take 6 features
    model[1].in_features = 8

    def bad(m, mesh):  # colwise output kept local: the next layer gets 3 of 6 features
        parallelize_module(m, mesh, {"0": ColwiseParallel()})

    _raises("forward failed in module '1'", bad, {"tp": 2}, model=model)


@pytest.mark.timeout(120)
def test_a_rank_that_dies_is_named_and_no_process_is_left():
    model = nn.Sequential(nn.Linear(8, 8))
    # importable, so that verify can spawn its ranks where this process can no longer fork them
    plan = tx.ranks(model, dies_on_rank_2, mesh={"dp": 4}, args=(torch.randn(2, 8),))
    with pytest.raises(RankDied, match="rank 2 died"):
        plan.verify(timeout=60)
    assert not multiprocessing.active_children() and not dist.is_initialized()


def _keeps_last(m, mesh):
    """torchtitan's FSDP: the last block is not resharded after forward (backward needs it first)."""
    n = len(m.model.layers)
    for i, layer in enumerate(m.model.layers):
        fully_shard(layer, mesh=mesh, reshard_after_forward=i < n - 1)
    fully_shard(m, mesh=mesh)
    return m


def _odd_middle(m, mesh):
    for i, layer in enumerate(m.model.layers):
        fully_shard(layer, mesh=mesh, reshard_after_forward=i != 5)
    fully_shard(m, mesh=mesh)
    return m


@pytest.mark.parametrize(
    ("fn", "mesh"), [(fsdp, {"dp": 4}), (titan, {"dp": 2, "tp": 2}), (_keeps_last, {"dp": 4})]
)
def test_sampled_blocks_give_the_whole_stacks_figures(fn, mesh):
    model = tiny_llama(layers=9)
    every = tx.ranks(model, fn, mesh=mesh, args=(tokens(),))
    sampled = tx.ranks(model, fn, mesh=mesh, args=(tokens(),), sample_blocks=True)
    assert any("4 and 5 of the 9 identical blocks" in n for n in sampled.notes)
    assert sampled.memory_parts == every.memory_parts
    assert sampled["model.layers.8"].local_shapes == every["model.layers.8"].local_shapes
    total = {(c.phase, c.op): 0 for c in every.comms}
    for plan, sign in ((every, 1), (sampled, -1)):
        for c in plan.comms:
            total[(c.phase, c.op)] += sign * c.count
    assert not any(total.values())  # as many collectives of each kind


def test_sampled_blocks_find_the_forwards_peak_where_it_moves_along_the_stack():
    """Wide blocks on few tokens: in the 4- and 5-block steps the forward peaks in the first block
    (FSDP2's all-gathered weights), past ~11 blocks after the last (the saved activations): the
    forward's peak of the whole stack is not the 4- and 5-block peaks extended in a line."""
    model = llama_of(hidden=256, intermediate=896, layers=14, heads=8, kv_heads=8, vocab=4008)
    x = (tokens(batch=1, seq=16, vocab=4008),)
    every = tx.ranks(model, titan, mesh={"dp": 2, "tp": 2}, args=x)
    sampled = tx.ranks(model, titan, mesh={"dp": 2, "tp": 2}, args=x, sample_blocks=True)
    assert any("4 and 5 of the 14 identical blocks" in n for n in sampled.notes)
    assert sampled.memory_parts == every.memory_parts  # activations were 4.5% under


def test_sampled_blocks_step_every_block_where_parallelize_treats_one_otherwise():
    model = tiny_llama(layers=9)
    plan = tx.ranks(model, _odd_middle, mesh={"dp": 4}, args=(tokens(),), sample_blocks=True)
    assert any("block 5 of 'model.layers' is sharded otherwise" in n for n in plan.notes)
    every = tx.ranks(model, _odd_middle, mesh={"dp": 4}, args=(tokens(),))
    assert plan.memory_parts == every.memory_parts


def test_a_second_plan_gives_the_same_figures_and_dtensor_caches_are_left_empty(llama):
    from torch.distributed.tensor import DTensor

    from torchxray._ranks.procs import forkable

    could_fork = forkable()  # False where an earlier test in this process ran a backward that
    # started autograd's device threads; a fresh process is checked in the test below
    first = tx.ranks(llama, titan, mesh={"dp": 2, "tp": 2}, args=(tokens(),))
    second = tx.ranks(llama, titan, mesh={"dp": 2, "tp": 2}, args=(tokens(),))
    # the first met every op for the first time (DTensor ran each on global-shape fake tensors to
    # learn its output's shape: not the step's memory), the second found them known
    assert first.memory_parts == second.memory_parts
    assert first.comms == second.comms
    prop = DTensor._op_dispatcher.sharding_propagator
    assert prop.propagate_op_sharding.cache_info().currsize == 0  # no rule holds a fake mesh
    assert type(prop.propagate_op_sharding).__name__ == "LocalLRUCache"  # DTensor's own again
    assert "propagate_op_sharding_non_cached" not in vars(prop)
    assert "_propagate_tensor_meta_non_cached" not in vars(prop)
    assert forkable() == could_fork and not dist.is_initialized()


_FRESH = """
import os
import torch.distributed as dist
from fixtures.ranks import titan, tiny_llama, tokens
import torchxray as tx
from torchxray._ranks.procs import forkable
import torch
with torch.no_grad():  # the probe's own backward runs whatever the caller's grad mode
    before = forkable()
with torch.inference_mode():
    before = before and forkable()
model = tiny_llama()
tx.ranks(model, titan, mesh={"dp": 2, "tp": 2}, args=(tokens(),))
after = forkable()
os.fork = None  # autograd's engine runs without device threads now: no probe forks again
tx.ranks(model, titan, mesh={"dp": 2, "tp": 2}, args=(tokens(),))
print(before, after, forkable(), dist.is_initialized())
"""


def test_a_dry_run_in_a_fresh_process_leaves_it_able_to_fork_ranks():
    import os
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", _FRESH], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    # verify forks its ranks (a notebook's parallelize function needs no pickling) after a plan
    assert out.stdout.split()[-4:] == ["True", "True", "True", "False"], out.stdout


def test_a_rule_whose_schema_does_not_hash_is_worked_out_and_not_kept():
    # A schema with symbolic sizes (a parallelize function that compiles its blocks) does not
    # hash; DTensor works its rule out every time then, and so does the dry run's warm cache.
    from torchxray._ranks import warm
    from torchxray._ranks.world import fake_world

    prop = DTensor._op_dispatcher.sharding_propagator
    seen = []
    kept = len(warm._RULES)
    # DTensor's own rule, stood in for while the cache is entered (which reads it then)
    prop.propagate_op_sharding_non_cached = lambda s: seen.append(s) or "rule"
    try:
        with fake_world({"dp": 2}), warm.warm_rules():
            unhashable = [1, 2]
            assert prop.propagate_op_sharding(unhashable) == "rule"
            assert prop.propagate_op_sharding(unhashable) == "rule"
    finally:
        vars(prop).pop("propagate_op_sharding_non_cached", None)
    assert seen == [unhashable, unhashable] and len(warm._RULES) == kept
    assert not dist.is_initialized()
