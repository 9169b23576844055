"""`ranks(model, parallelize, mesh={"dp": 2, "tp": 2}, args=(x,)) -> RanksPlan`: what every rank of a
sharded model holds, sends and needs, from a dry run on one machine: the user's own
``parallelize(model, mesh)`` (``fully_shard``, ``parallelize_module`` with ``ColwiseParallel`` /
``RowwiseParallel`` / ``SequenceParallel``) runs on a meta copy of the model on rank 0 of a fake
process group, then one training step runs on fake tensors. The user's model is never changed and
torch.distributed is left as found.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> from torch.distributed.fsdp import fully_shard
    >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
    >>> plan = tx.ranks(model, lambda m, mesh: fully_shard(m, mesh=mesh), mesh={"dp": 4}, args=(torch.randn(2, 16),))
    >>> plan.world_size, plan["0"].placements["weight"]
    (4, '(Shard(dim=0),)')
    >>> [plan["0"].local_shapes["weight"][r] for r in range(4)]   # 10 rows over 4 ranks
    [(3, 16), (3, 16), (3, 16), (1, 16)]
    >>> sorted({(c.phase, c.op) for c in plan.comms})
    [('backward', 'reduce_scatter'), ('forward', 'all_gather')]

`args` / `kwargs` are one rank's inputs (with data parallelism, its share of the batch). The step
is forward, a loss (the output's ``loss``, else the sum of its floating tensors), backward and an
AdamW step. ``plan.memory`` is each rank's peak live bytes over that step: the dry run measures rank
0 and gives every other rank each phase's peak of rank 0 moved by the difference in the bytes of
its own shards that phase holds (parameters, gradients, optimizer state; FSDP2's padded storages
count as the largest shard's), an estimate where dynamic memory differs between ranks, said in
``plan.notes``. ``plan.verify()`` runs the same step on real processes (gloo, one per rank)
and compares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ._ranks.dry import DryRun, dry_run
from ._ranks.procs import RankDied, dry_run_here, run_ranks
from ._ranks.where import OUTSIDE
from ._ranks.world import check_mesh

__all__ = ["Comm", "RankMemory", "RankRecord", "RanksPlan", "ranks"]

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Comm:
    """Collectives one rank runs in one module and phase ("forward", "backward" or "step"): `op`
    ("all_gather", "reduce_scatter", "all_reduce", ...), how many calls, and their bytes (each
    call's full buffer: an all-gather's output, a reduce-scatter's input), on mesh dimension(s)
    `mesh_dim`.

    Attributes:
        phase: ``"forward"``, ``"backward"`` or ``"step"``.
        op: The collective: ``"all_gather"``, ``"reduce_scatter"``, ``"all_reduce"``...
        count: How many calls.
        bytes: Their bytes, each call's full buffer.
        mesh_dim: The mesh dimension(s) of the group, e.g. ``"dp"``.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> from torch.distributed.fsdp import fully_shard
        >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
        >>> shard = lambda m, mesh: fully_shard(m, mesh=mesh)
        >>> plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(torch.randn(2, 16),))
        >>> [(c.phase, c.op) for c in plan.comms]
        [('forward', 'all_gather'), ('backward', 'reduce_scatter')]
        >>> plan.comms[0]
        Comm(phase='forward', op='all_gather', count=1, bytes=992, mesh_dim='dp')
    """

    phase: str
    op: str
    count: int
    bytes: int
    mesh_dim: str


@dataclass(frozen=True, slots=True)
class RankRecord:
    """One module's own parameters and buffers on every rank, and the collectives run in it:
    ``comms`` its own (while its forward, its hooks included, ran, or since its backward began
    last), ``comms_total`` those and the ones of the modules that ran inside it: the module-level
    counts of torch's ``CommDebugMode``.

    Attributes:
        path: The module's dotted path.
        cls: Its class name.
        placements: Tensor name -> its placements, e.g. ``{"weight": "(Shard(dim=0),)"}``.
        mesh_dims: Tensor name -> the mesh dimensions it is placed over.
        global_shapes: Tensor name -> its full shape.
        local_shapes: Tensor name -> {rank: the shape that rank holds}.
        comms: The collectives run in this module itself (`Comm`).
        comms_total: The collectives run in it and in the modules that ran inside it.
        local_bytes: Tensor name -> {rank: the bytes that rank holds}.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> from torch.distributed.fsdp import fully_shard
        >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
        >>> shard = lambda m, mesh: fully_shard(m, mesh=mesh)
        >>> plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(torch.randn(2, 16),))
        >>> record = plan["2"]
        >>> record.global_shapes["weight"], record.local_shapes["weight"]
        ((4, 10), {0: (1, 10), 1: (1, 10), 2: (1, 10), 3: (1, 10)})
        >>> record.bytes_on(0)
        44
    """

    path: str
    cls: str
    placements: Mapping[str, str]
    mesh_dims: Mapping[str, tuple[str, ...]]
    global_shapes: Mapping[str, Shape]
    local_shapes: Mapping[str, Mapping[int, Shape]]
    comms: tuple[Comm, ...]
    local_bytes: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    comms_total: tuple[Comm, ...] = ()

    def bytes_on(self, rank: int) -> int:
        """The bytes of this module's own tensors that `rank` holds.

        Args:
            rank: A rank of the plan's world.

        Returns:
            Bytes, 0 for a rank that holds none.
        """
        return sum(per_rank.get(rank, 0) for per_rank in self.local_bytes.values())


@dataclass(frozen=True, slots=True)
class RankMemory:
    """One rank's bytes in the training step: its shards of the parameters, gradients and AdamW
    state, the activations a forward keeps (the highest live bytes above weights and inputs during
    forward, all-gathered parameters included) and the peak of the whole step.

    Attributes:
        params: Bytes of the rank's parameter shards.
        buffers: Bytes of its buffers.
        grads: Bytes of its gradient shards.
        optimizer: Bytes of AdamW's state for its shards.
        activations: The highest live bytes above weights and inputs during forward.
        peak: The peak live bytes of the whole step.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> from torch.distributed.fsdp import fully_shard
        >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
        >>> shard = lambda m, mesh: fully_shard(m, mesh=mesh)
        >>> plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(torch.randn(2, 16),))
        >>> parts = plan.memory_parts[0]
        >>> parts.peak == plan.memory[0], parts.peak >= parts.params + parts.grads
        (True, True)
    """

    params: int
    buffers: int
    grads: int
    optimizer: int
    activations: int
    peak: int


@dataclass(frozen=True)
class RanksPlan:
    """What every rank of a sharded model holds, sends and needs: the result of `ranks()`.

    ``plan[path]`` gives a module's `RankRecord` (modules that hold tensors or run collectives);
    iterating gives them in module order.

    Attributes:
        world_size: The number of ranks.
        mesh: The mesh, ``{dimension name: size}``.
        records: Path -> `RankRecord`.
        memory: Rank -> its peak bytes over the training step.
        memory_parts: Rank -> its `RankMemory` (parameters, gradients, optimizer, activations).
        notes: Where the plan is an estimate or left something out, one sentence each.
        stepped: Whether a training step ran (comms and memory are known).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> from torch.distributed.fsdp import fully_shard
        >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
        >>> shard = lambda m, mesh: fully_shard(m, mesh=mesh)
        >>> plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(torch.randn(2, 16),))
        >>> plan.world_size, plan.mesh, [r.path for r in plan]
        (4, {'dp': 4}, ['', '0', '1', '2'])
        >>> sorted(plan.memory) == [0, 1, 2, 3]
        True
    """

    world_size: int
    mesh: Mapping[str, int]
    records: Mapping[str, RankRecord]
    memory: Mapping[int, int]
    memory_parts: Mapping[int, RankMemory]
    notes: tuple[str, ...]
    stepped: bool = True  # a training step ran: comms (and memory, unless notes say not) are known
    _source: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    # collectives outside every module's forward and backward (before the first backward began:
    # FSDP2's pre-backward of a root whose output is a ModelOutput); CommDebugMode's "Global" alone
    outside: tuple[Comm, ...] = ()

    def __getitem__(self, path: str) -> RankRecord:
        try:
            return self.records[path]
        except KeyError:
            raise KeyError(
                f"no module {path!r} in the plan; paths are as in model.named_modules()"
            ) from None

    def __iter__(self) -> Iterator[RankRecord]:
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)

    @property
    def source(self) -> tuple[Any, ...]:
        """What the plan was made from, ``(model, parallelize, args, kwargs)``, for ``verify`` and
        the Ranks tab's "Plan again"; ``()`` for a plan built by hand."""
        return self._source

    @property
    def comms(self) -> tuple[Comm, ...]:
        """Every module's collectives, in module order, then those outside every module."""
        return (*(c for r in self.records.values() for c in r.comms), *self.outside)

    def verify(self, backend: str = "gloo", *, timeout: float = 120.0) -> Any:
        """Run the plan on real processes, one per rank, and compare: see `_ranks.verify`.

        Each rank runs the same step on a real process group on this machine (forked, or spawned
        where forking is unsafe: then `parallelize` must be importable), and its local shapes,
        collectives and peak memory are compared with the plan's. Every process is ended on a
        result, an error, a dead rank, the timeout or a KeyboardInterrupt.

        Args:
            backend: The process group backend; ``"gloo"`` runs on CPUs.
            timeout: Seconds before the ranks are ended.

        Returns:
            A verification with ``ok``, ``mismatches`` (one sentence each, naming module, rank and
            figure) and ``memory_error`` (the worst relative difference in peak memory).

        Examples:
            >>> v = plan.verify(backend="gloo")  # doctest: +SKIP
            >>> v.ok, v.mismatches  # doctest: +SKIP
            (True, ())
        """
        from ._ranks.verify import verify

        return verify(self, backend=backend, timeout=timeout)


def _comms(run: DryRun) -> tuple[dict[str, tuple[Comm, ...]], dict[str, tuple[Comm, ...]]]:
    """Each module's own collectives, and its total: its own and those of every module that ran
    inside it (``Measured.within``), summed per phase, op and mesh dimension."""
    out: dict[str, list[Comm]] = {}
    if run.measured is None:
        return {}, {}
    total: dict[tuple[str, str, str, str], list[int]] = {}
    within = run.measured.within
    for (path, phase, op, dim), (count, nbytes) in sorted(run.measured.comms.items()):
        out.setdefault(path, []).append(Comm(phase, op, count, nbytes, dim))
        for where in (path, *within.get(path, ())):
            acc = total.setdefault((where, phase, op, dim), [0, 0])
            acc[0] += count
            acc[1] += nbytes
    totals: dict[str, list[Comm]] = {}
    for (where, phase, op, dim), (count, nbytes) in sorted(total.items()):
        totals.setdefault(where, []).append(Comm(phase, op, count, nbytes, dim))
    return {p: tuple(c) for p, c in out.items()}, {p: tuple(c) for p, c in totals.items()}


def _memory(run: DryRun, world_size: int) -> tuple[dict[int, RankMemory], list[str]]:
    m = run.measured
    if m is None or not run.memory_known:
        return {}, []
    # each rank's own shard bytes, each parameter once; FSDP2's padded storages are the largest
    # shard's on every rank (their parameters' and gradients'), the optimizer state the shard's own
    params = {r: 0 for r in range(world_size)}
    grads = {r: 0 for r in range(world_size)}
    trainable = {r: 0 for r in range(world_size)}
    for shards in run.shards.values():
        for name, per_rank in shards.local_bytes.items():
            if name not in shards.placements or name in shards.buffer_names:
                continue
            held = max(per_rank.values(), default=0) if name in shards.padded else None
            for r, b in per_rank.items():
                params[r] += b if held is None else held
                if name in shards.trainable:
                    grads[r] += b if held is None else held
                    trainable[r] += b
    opt_ratio = m.optimizer / trainable[0] if trainable[0] else 0.0
    out: dict[int, RankMemory] = {}
    for r in range(world_size):
        dp = params[r] - params[0]
        dg = grads[r] - grads[0]
        dopt = round((trainable[r] - trainable[0]) * opt_ratio)
        # each phase's peak moved by what that phase holds of the rank's own parts
        moved = {"forward": dp, "backward": dp + dg, "step": dp + dg + dopt}
        peaks = [b + moved.get(ph, dp + dg + dopt) for ph, b in m.phase_peaks.items()]
        peak = max(peaks) if peaks else m.peak + dp + dg + dopt
        out[r] = RankMemory(
            m.params + dp, m.buffers, m.grads + dg, m.optimizer + dopt, m.activations, peak
        )
    notes = []
    if any(params[r] != params[0] for r in params):
        notes.append(
            "ranks hold shards of different sizes: their memory is rank 0's measured step moved by "
            "the difference in their parameters, gradients and optimizer state"
        )
    return out, notes


class _DryWork:
    def __init__(self, *job: Any) -> None:
        self.job = job

    def __call__(self, rank: int, store: str) -> DryRun:
        model, parallelize, dims, args, kw, step, sample = self.job
        return dry_run(model, parallelize, dims, args, kw, step=step, sample_blocks=sample)


def _dry(
    model: nn.Module,
    parallelize: Any,
    dims: dict[str, int],
    args: Any,
    kw: Any,
    step: bool,
    sample: bool,
    timeout: float,
) -> DryRun:
    """The dry run here, where its backward leaves this process able to fork ranks that run
    theirs (`procs.dry_run_here`: a CPU-only machine), or where it cannot fork them anyway;
    else in a forked process, so that `verify` can still fork its ranks later. Here, DTensor's
    sharding rules and the fake tensors' caches stay warm from one plan to the next (a forked dry
    run paid their warm-up every time: most of a small model's dry run)."""
    if not step or dry_run_here():
        return dry_run(model, parallelize, dims, args, kw, step=step, sample_blocks=sample)
    work = _DryWork(model, parallelize, dims, args, kw, step, sample)
    try:
        return run_ranks(1, work, timeout, fork=True)[0]
    except RankDied as exc:
        if exc.cause is not None:
            raise exc.cause.with_traceback(None) from None
        raise RuntimeError(str(exc).replace("rank 0", "the dry run", 1)) from None


def ranks(
    model: nn.Module,
    parallelize: Callable[..., Any],
    mesh: Mapping[str, int],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    world_size: int | None = None,
    step: bool = True,
    sample_blocks: bool = False,
    timeout: float = 600.0,
) -> RanksPlan:
    """Plan `model` sharded by ``parallelize(model, device_mesh)`` over `mesh` (``{dim name: size}``,
    e.g. ``{"dp": 2, "tp": 2}``): a dry run on a fake process group, nothing allocated. `world_size`,
    when given, must be the mesh's size. ``step=False`` skips the training step (no comms, no
    memory). ``sample_blocks=True`` steps 4 and 5 of a long stack of identical blocks and extends
    the figures to all of them where parallelize placed them alike (`_ranks.blocks`: fast on 80
    layers; the peaks are extended linearly, an estimate, said in ``plan.notes``). The dry run runs in this process where its backward leaves it able to fork
    `verify`'s ranks, else in a forked process within `timeout` seconds.

    The user's model is never changed (`parallelize` runs on a meta copy), and torch.distributed
    is left as found: a process group you had stays yours, none is left behind.

    Args:
        model: The model, as it is before sharding.
        parallelize: Your own ``parallelize(model, mesh) -> model`` (``fully_shard``,
            ``parallelize_module`` with ``ColwiseParallel`` / ``RowwiseParallel`` /
            ``SequenceParallel``...), as in a training script.
        mesh: The device mesh, ``{dimension name: size}``.
        args: One rank's positional inputs (with data parallelism, its share of the batch).
        kwargs: One rank's keyword inputs.
        world_size: The number of ranks, when given: it must be the mesh's size.
        step: Run a training step (forward, a loss, backward, AdamW); False gives placements and
            shapes only.
        sample_blocks: Step 4 and 5 of a long stack of identical blocks and extend the figures.
        timeout: Seconds the dry run may take where it runs in a forked process.

    Returns:
        The `RanksPlan`.

    Raises:
        TypeError: `model` is not an `nn.Module`, or `parallelize` is not callable.
        ValueError: The mesh is empty, its size is not `world_size`, or `parallelize` asks for a
            mesh dimension the mesh lacks.
        RuntimeError: `parallelize` or the sharded step failed (the message names the module).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> from torch.distributed.fsdp import fully_shard
        >>> model = nn.Sequential(nn.Linear(16, 10), nn.ReLU(), nn.Linear(10, 4))
        >>> shard = lambda m, mesh: fully_shard(m, mesh=mesh)
        >>> plan = tx.ranks(model, shard, mesh={"dp": 4}, args=(torch.randn(2, 16),))
        >>> plan["0"].placements["weight"], plan["0"].local_shapes["weight"][3]
        ('(Shard(dim=0),)', (1, 16))
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"ranks() plans an nn.Module, not a {type(model).__name__}.")
    if not callable(parallelize):
        raise TypeError(
            "parallelize must be a function parallelize(model, mesh) -> model, as in a training script."
        )
    dims = check_mesh(mesh, world_size)
    size = 1
    for s in dims.values():
        size *= s
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kw = dict(kwargs or {})
    run = _dry(model, parallelize, dims, args, kw, step, sample_blocks, timeout)
    comms, totals = _comms(run)
    records = {
        path: RankRecord(
            path,
            run.classes.get(path, ""),
            sh.placements,
            sh.mesh_dims,
            sh.global_shapes,
            sh.local_shapes,
            comms.get(path, ()),
            sh.local_bytes,
            totals.get(path, ()),
        )
        for path, sh in run.shards.items()
    }
    parts, notes = _memory(run, size)
    return RanksPlan(
        size,
        dims,
        records,
        {r: p.peak for r, p in parts.items()},
        parts,
        tuple(run.notes + notes),
        run.measured is not None,
        (model, parallelize, args, kw),
        comms.pop(OUTSIDE, ()),
    )
