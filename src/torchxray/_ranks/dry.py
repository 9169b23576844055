"""The dry run: the meta copy sharded by the user's function on rank 0 of a fake process group,
what every rank holds read from it, and one training step on fake tensors watched by `StepMeter`.
Nothing is allocated and no process is started; torch.distributed is left as found (`world`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils import _pytree as pytree

from .blocks import SMALL, cut, extend, grows, odd_block, repeated_stack
from .meta import meta_copy, parallelized
from .shards import Shards, fsdp_params, module_shards
from .step import Measured, run_step
from .warm import warm_rules
from .world import fake_world

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True, slots=True)
class DryRun:
    classes: dict[str, str]  # path -> class name (the user's, before FSDP renamed it)
    shards: dict[str, Shards]
    measured: Measured | None
    notes: list[str]
    memory_known: bool = True


def _fake_inputs(fm: FakeTensorMode, args: Any, kwargs: Any) -> tuple[Any, Any]:
    def fake(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            with fm:
                return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu")
        return x

    return pytree.tree_map(fake, (args, kwargs))


def _step(
    sharded: nn.Module,
    device_mesh: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    collect: bool = False,
    stack: tuple[str, int] | None = None,
) -> Measured:
    """One fake training step of the sharded meta copy."""
    fm = FakeTensorMode(allow_non_fake_inputs=True)
    with fm:
        sharded.to_empty(device="cpu")
    fargs, fkwargs = _fake_inputs(fm, args, kwargs)
    with fm:
        return run_step(
            sharded, device_mesh, tuple(fargs), dict(fkwargs), collect=collect, stack=stack
        )


def _all_shards(sharded: nn.Module, world_size: int) -> tuple[dict[str, Shards], list[str]]:
    shards: dict[str, Shards] = {}
    notes: list[str] = []
    coords: dict[int, Any] = {}
    fsdp = fsdp_params(sharded)
    for path, mod in sharded.named_modules():
        shards[path], more = module_shards(mod, world_size, coords, fsdp)
        notes += [f"{path or '(root)'}.{n}" for n in more]
    return shards, notes


def _cut_step(
    model: nn.Module,
    parallelize: Callable[..., Any],
    device_mesh: Any,
    inputs: tuple[Any, Any],
    full: tuple[nn.Module, dict[str, Shards]],
    stack: tuple[str, int],
    keep: int,
) -> Measured | int:
    """The step of a copy cut to `keep` blocks, or the first block of the whole stack that it
    does not stand for (`blocks.odd_block`)."""
    path, n = stack
    copy_ = meta_copy(model)
    cut(copy_, path, keep)
    sharded = parallelized(copy_, parallelize, device_mesh)
    world_size = device_mesh.size()
    odd = odd_block(full, (sharded, _all_shards(sharded, world_size)[0]), path, n, keep)
    if odd is not None:
        return odd
    return _step(sharded, device_mesh, *inputs, collect=True, stack=(path, keep))


def _sampled(
    model: nn.Module,
    parallelize: Callable[..., Any],
    device_mesh: Any,
    inputs: tuple[Any, Any],
    full: tuple[nn.Module, dict[str, Shards]],
    stack: tuple[str, int],
) -> tuple[Measured, bool, list[str]]:
    """The step of the whole stack from steps on copies cut to `SMALL` and `SMALL` + 1 blocks,
    or, where the whole stack's blocks are not placed alike, of every block."""
    path, n = stack
    runs = []
    for keep in (SMALL, SMALL + 1):
        run = _cut_step(model, parallelize, device_mesh, inputs, full, stack, keep)
        if isinstance(run, int):
            note = (
                f"block {run} of {path!r} is sharded otherwise than the blocks sample_blocks "
                "would stand it for (its classes, hooks, FSDP settings, placements or local shapes): "
                "every block was stepped"
            )
            return _step(full[0], device_mesh, *inputs), True, [note]
        runs.append(run)
    small, big = runs
    notes = []
    memory_known = grows(small, big)
    if not memory_known:
        notes.append(
            f"no memory figures: the step of {SMALL + 1} blocks needed less of some part than the "
            f"step of {SMALL}, so memory does not grow block by block here; plan without sample_blocks"
        )
    notes.append(
        f"the training step was measured on {SMALL} and {SMALL + 1} of the {n} identical blocks of {path!r} "
        "and extended to all of them (comms of every middle block, memory per block; the "
        "forward's peak per place in the stack, the backward's and the optimizer step's peaks "
        "linearly, an estimate)"
    )
    return extend(small, big, path, n), memory_known, notes


def dry_run(
    model: nn.Module,
    parallelize: Callable[..., Any],
    mesh: Mapping[str, int],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    step: bool,
    sample_blocks: bool = False,
) -> DryRun:
    world_size = 1
    for size in mesh.values():
        world_size *= size
    classes = {p: type(m).__name__ for p, m in model.named_modules()}
    copy_ = meta_copy(model)
    notes: list[str] = []
    stack = repeated_stack(model) if step and sample_blocks else None
    measured = None
    memory_known = True
    with fake_world(mesh) as device_mesh, warm_rules():
        sharded = parallelized(copy_, parallelize, device_mesh)
        shards, more = _all_shards(sharded, world_size)
        notes += more
        if step and stack is None:
            measured = _step(sharded, device_mesh, args, kwargs)
        elif step and stack is not None:
            full = (sharded, shards)
            measured, memory_known, more = _sampled(
                model, parallelize, device_mesh, (args, kwargs), full, stack
            )
            notes += more
    return DryRun(classes, shards, measured, notes, memory_known)
