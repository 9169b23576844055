"""DTensor's sharding rules, kept warm from one dry run to the next and apart from the user's.

DTensor caches the sharding rule of each op schema it meets (a C++ fast path's cache and a Python
LRU). A schema's meshes compare by layout and dimension names only (``DeviceMesh.__eq__``), while
a cached rule holds the mesh it was made on, and through it its process groups' names: a rule
made on the fake world would hand a later mesh of the same layout (a user's real one, a forked
rank's) groups that do not exist there, and one made on a user's mesh would hand the dry run real
groups. So the fake world starts and ends with those caches empty (`forget_meshes`), and while a
dry run runs, DTensor looks its rules up in a cache of ours (`warm_rules`), keyed by the schema
and by the fake world's groups (every name with its ranks): a rule is reused only where each
group name it can hold means the same ranks, as within one process, where torch shares rules
between equal meshes. The rules are DTensor's own (``propagate_op_sharding_non_cached``); as in
DTensor, none is kept while dynamo or make_fx traces (a parallelize function that compiles its
blocks), nor for a schema that does not hash (symbolic sizes).

Why: working the rules out was most of a small model's first dry run (2.2 s of 5.8 s under
cProfile for the tiny Llama's torchtitan-style plan; a warm one took 0.7 s against 2.6 s), and the
dry run, which ran in a forked process until then, lost them with it every time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

__all__ = ["forget_meshes", "warm_rules"]

_RULES: dict[tuple[Any, Any], Any] = {}  # (the world's groups, op schema) -> OutputSharding
_LIMIT = (
    20_000  # rules kept, all worlds together (a step of the 70B Llama over dp 8 x tp 8 needs 156)
)


def forget_meshes() -> None:
    """Empty DTensor's sharding caches (caches only: the next op works its rule out again)."""
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor._redistribute import clear_redistribute_planner_cache

    torch._C._clear_DTensor_sharding_propagator_cache()  # the C++ fast path's
    DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding.cache_clear()
    clear_redistribute_planner_cache()  # keyed by weak references, which compare as meshes do


def _world() -> tuple[Any, ...]:
    """This process's groups: each name with its ranks, and this rank."""
    w = c10d._world
    groups = tuple(
        sorted(
            (name, tuple(sorted(w.pg_group_ranks.get(pg, {}).items())))
            for pg, name in w.pg_names.items()
        )
    )
    return (dist.get_rank(), groups)


def _tracing() -> bool:
    """Whether dynamo or make_fx is tracing. Not DTensor's own test (``_are_we_tracing``), which
    counts any fake mode as tracing, and the dry run's step runs under one."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    return torch.compiler.is_compiling() or get_proxy_mode() is not None


@contextmanager
def warm_rules() -> Iterator[None]:
    """DTensor's rule lookups served from ``_RULES`` while the dry run runs (inside `fake_world`,
    whose DTensor caches are empty on the way in and out)."""
    from torch.distributed.tensor import DTensor

    prop = DTensor._op_dispatcher.sharding_propagator
    compute = prop.propagate_op_sharding_non_cached
    lru = prop.propagate_op_sharding

    def rule(schema: Any) -> Any:
        if _tracing():  # as DTensor does: a rule worked out while tracing is not kept
            return compute(schema)
        key = (_world(), schema)
        try:
            hit = _RULES.get(key)
        except TypeError:  # a schema with symbolic sizes does not hash: worked out every time
            return compute(schema)
        if hit is None:
            if len(_RULES) > _LIMIT:
                _RULES.clear()
            hit = _RULES[key] = compute(schema)
        return hit

    # instance attributes shadow the method (called by the C++ fast path's misses) and the LRU
    prop.propagate_op_sharding_non_cached = rule  # type: ignore[method-assign,assignment]
    prop.propagate_op_sharding = rule  # type: ignore[assignment]
    try:
        yield
    finally:
        del prop.propagate_op_sharding_non_cached
        prop.propagate_op_sharding = lru
