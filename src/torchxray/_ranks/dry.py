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

from .blocks import SMALL, cut, extend, grows, repeated_stack
from .meta import meta_copy, parallelized
from .shards import Shards, module_shards
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
    model: nn.Module,
    parallelize: Callable[..., Any],
    device_mesh: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    sharded: nn.Module | None = None,
    collect: bool = False,
) -> Measured:
    """One fake training step of ``parallelize(meta copy)`` (or of `sharded`, already made)."""
    if sharded is None:
        sharded = parallelized(
            meta_copy(model) if not _is_copy(model) else model, parallelize, device_mesh
        )
    fm = FakeTensorMode(allow_non_fake_inputs=True)
    with fm:
        sharded.to_empty(device="cpu")
    fargs, fkwargs = _fake_inputs(fm, args, kwargs)
    with fm:
        return run_step(sharded, device_mesh, tuple(fargs), dict(fkwargs), collect=collect)


def _is_copy(model: nn.Module) -> bool:
    return getattr(model, "_tx_ranks_copy", False)


def _cut_copy(model: nn.Module, path: str, keep: int) -> nn.Module:
    copy_ = meta_copy(model)
    cut(copy_, path, keep)
    object.__setattr__(copy_, "_tx_ranks_copy", True)
    return copy_


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
    with fake_world(mesh) as device_mesh, warm_rules():
        sharded = parallelized(copy_, parallelize, device_mesh)
        shards: dict[str, Shards] = {}
        coords: dict[int, Any] = {}
        for path, mod in sharded.named_modules():
            shards[path], more = module_shards(mod, world_size, coords)
            notes += [f"{path or '(root)'}.{n}" for n in more]
        measured = None
        memory_known = True
        if step and stack is None:
            measured = _step(model, parallelize, device_mesh, args, kwargs, sharded)
        elif step and stack is not None:
            path, n = stack
            del sharded, copy_
            small = _step(
                _cut_copy(model, path, SMALL), parallelize, device_mesh, args, kwargs, collect=True
            )
            big = _step(
                _cut_copy(model, path, SMALL + 1),
                parallelize,
                device_mesh,
                args,
                kwargs,
                collect=True,
            )
            measured = extend(small, big, path, n)
            memory_known = grows(small, big)
            if not memory_known:
                notes.append(
                    f"no memory figures: the step of {SMALL + 1} blocks needed less of some part than the "
                    f"step of {SMALL}, so memory does not grow block by block here; plan without sample_blocks"
                )
            notes.append(
                f"the training step was measured on {SMALL} and {SMALL + 1} of the {n} identical blocks of {path!r} "
                "and extended to all of them (comms of every middle block, memory per block)"
            )
    return DryRun(classes, shards, measured, notes, memory_known)
