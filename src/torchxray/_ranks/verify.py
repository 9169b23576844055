"""`plan.verify(backend="gloo")`: the plan run for real, one process per rank on this machine
(`procs`), each sharding its own copy of the model with the user's function on a real process
group and running the same training step under the same meter as the dry run (`step`); then every
rank's local shapes, collective counts and bytes, and peak memory, compared with the plan.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch

from .procs import forkable, run_ranks
from .step import run_step
from .warm import forget_meshes
from .where import OUTSIDE

# The plan is `torchxray.ranks.RanksPlan`, which calls `verify`: typed as Any here rather than
# imported, so that the two modules do not import each other (tests/test_import_graph.py).
RanksPlan = Any

__all__ = ["Verification", "verify"]

Shape = tuple[int, ...]
MEMORY_TOLERANCE = 0.10
BYTES_TOLERANCE = 0.01


@dataclass(frozen=True, slots=True)
class Verification:
    """What the real run measured and where it differs from the plan (``mismatches``, one sentence
    each). `memory_error` is each rank's ``plan / real - 1``."""

    ok: bool
    world_size: int
    backend: str
    seconds: float
    local_shapes: dict[str, dict[str, dict[int, Shape]]]  # path -> tensor -> {rank: shape}
    comms: dict[
        int, dict[tuple[str, str, str, str], tuple[int, int]]
    ]  # rank -> (path, phase, op, dim) -> (count, bytes)
    memory: dict[int, int]  # rank -> peak bytes of the step
    memory_error: dict[int, float]
    mismatches: tuple[str, ...]

    def __repr__(self) -> str:
        head = "ok" if self.ok else f"{len(self.mismatches)} mismatches"
        worst = max((abs(e) for e in self.memory_error.values()), default=0.0)
        return (
            f"Verification({head}: {self.world_size} {self.backend} ranks in {self.seconds:.1f} s, "
            f"memory within {worst:.1%})"
        )


class RankWork:
    """One rank of the real run; a class, not a closure, so that spawned ranks can unpickle it."""

    def __init__(
        self, source: tuple[Any, ...], mesh: dict[str, int], backend: str, timeout: float
    ) -> None:
        self.source, self.mesh, self.backend, self.timeout = source, mesh, backend, timeout

    def __call__(self, rank: int, store_path: str) -> dict[str, Any]:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import DTensor

        model, parallelize, args, kwargs = self.source
        world_size = 1
        for size in self.mesh.values():
            world_size *= size
        torch.set_num_threads(1)
        # a forked copy of the caller's groups is not ours to use: start this process clean
        c10d._world = c10d._World()
        c10d._unregister_all_process_groups()
        forget_meshes()  # DTensor's caches may hold the caller's meshes, whose groups are not here
        store = dist.FileStore(store_path, world_size)
        dist.init_process_group(
            self.backend,
            store=store,
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=self.timeout),
        )
        try:
            mesh = init_device_mesh(
                "cpu", tuple(self.mesh.values()), mesh_dim_names=tuple(self.mesh)
            )
            sharded = parallelize(model, mesh)
            sharded = model if sharded is None else sharded
            if any(t.is_meta for t in [*sharded.parameters(), *sharded.buffers()]):
                sharded.to_empty(device="cpu")
            shapes: dict[str, dict[str, Shape]] = {}
            for path, mod in sharded.named_modules():
                own = [*mod.named_parameters(recurse=False), *mod.named_buffers(recurse=False)]
                shapes[path] = {
                    n: tuple((t.to_local() if isinstance(t, DTensor) else t).shape)
                    for n, t in own
                    if t is not None
                }
            measured = run_step(sharded, mesh, tuple(args), dict(kwargs))
            return {"shapes": shapes, "comms": measured.comms, "peak": measured.peak}
        finally:
            dist.destroy_process_group()


def verify(plan: RanksPlan, backend: str = "gloo", timeout: float = 120.0) -> Verification:
    import time

    if not plan.source:
        raise ValueError("this plan has no model to run: make it with tx.ranks(...).")
    model = plan.source[0]
    start = time.perf_counter()
    work = RankWork(plan.source, dict(plan.mesh), backend, timeout)
    fork = forkable()
    if not fork:
        try:
            pickle.dumps(work)
        except Exception as exc:
            raise RuntimeError(
                "verify cannot start the ranks: this process has run a backward, so forked ranks could not "
                f"(autograd), and the model or parallelize function cannot be pickled for new ones ({exc}); "
                "define parallelize in an importable .py file, or verify before any backward."
            ) from exc
    results = run_ranks(plan.world_size, work, timeout, fork=fork)
    seconds = time.perf_counter() - start
    del model
    shapes: dict[str, dict[str, dict[int, Shape]]] = {}
    for rank, res in sorted(results.items()):
        for path, tensors in res["shapes"].items():
            for name, shape in tensors.items():
                shapes.setdefault(path, {}).setdefault(name, {})[rank] = shape
    comms = {rank: res["comms"] for rank, res in results.items()}
    memory = {rank: res["peak"] for rank, res in results.items()}
    mismatches = _compare(plan, shapes, comms, memory)
    error = {r: (plan.memory[r] / memory[r] - 1.0) if memory.get(r) else 0.0 for r in plan.memory}
    return Verification(
        not mismatches,
        plan.world_size,
        backend,
        seconds,
        shapes,
        comms,
        memory,
        error,
        tuple(mismatches),
    )


_ALL = "\0all"  # a backward collective's key, whatever module was running when it was issued


def _backward_summed(
    comms: dict[tuple[str, str, str, str], tuple[int, int]],
) -> dict[tuple[str, str, str, str], tuple[int, int]]:
    """Backward collectives summed over modules: which module's backward is running when FSDP2
    issues a gradient's reduce-scatter moves between neighbouring blocks from run to run (seen on
    a loaded machine: a block's reduce-scatter charged to the next block), so the backward's are
    compared by op and mesh dimension; the forward's stay per module."""
    out: dict[tuple[str, str, str, str], tuple[int, int]] = {}
    for (path, phase, op, dim), (count, size) in comms.items():
        key = (_ALL if phase == "backward" else path, phase, op, dim)
        c, b = out.get(key, (0, 0))
        out[key] = (c + count, b + size)
    return out


def _compare(
    plan: RanksPlan,
    shapes: dict[str, dict[str, dict[int, Shape]]],
    comms: dict[int, dict[tuple[str, str, str, str], tuple[int, int]]],
    memory: dict[int, int],
) -> list[str]:
    out: list[str] = []
    for path, rec in plan.records.items():
        for name, per_rank in rec.local_shapes.items():
            real = shapes.get(path, {}).get(name, {})
            for rank, shape in per_rank.items():
                if real.get(rank) != shape:
                    where = f"{path}.{name}" if path else name
                    out.append(f"{where} on rank {rank}: planned {shape}, real {real.get(rank)}")
    planned = {
        (path, c.phase, c.op, c.mesh_dim): (c.count, c.bytes)
        for path, rec in plan.records.items()
        for c in rec.comms
    }
    planned.update({(OUTSIDE, c.phase, c.op, c.mesh_dim): (c.count, c.bytes) for c in plan.outside})
    if plan.stepped:  # the plan ran a step: compare its comms and memory
        planned = _backward_summed(planned)
        for rank, real_comms in sorted(comms.items()):
            real_comms = _backward_summed(real_comms)
            for key in sorted(set(planned) | set(real_comms)):
                p, r = planned.get(key, (0, 0)), real_comms.get(key, (0, 0))
                path, phase, op, dim = key
                place = (
                    "the backward, all modules"
                    if path == _ALL
                    else "no module"
                    if path == OUTSIDE
                    else path or "the root module"
                )
                where = f"{op} on {dim} in {place} ({phase}) on rank {rank}"
                if p[0] != r[0]:
                    out.append(f"{where}: planned {p[0]} calls, real {r[0]}")
                elif r[1] and abs(p[1] - r[1]) > BYTES_TOLERANCE * r[1]:
                    out.append(f"{where}: planned {p[1]} bytes, real {r[1]}")
        for rank, peak in sorted(memory.items()):
            est = plan.memory.get(rank, 0)
            if peak and abs(est - peak) > MEMORY_TOLERANCE * peak:
                out.append(
                    f"peak memory on rank {rank}: planned {est} bytes, real {peak} ({est / peak - 1:+.1%})"
                )
    return out
