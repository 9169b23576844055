"""What `memory()` checks and opens before a step: ``batch=`` added to the inputs, sharded
(DTensor) weights refused, the model's tensors each once and whether they hold values on the CPU
(the fallback for a step fake tensors cannot run)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import torch

__all__ = ["refuse_sharded", "unique", "values_on_cpu", "with_batch"]


def with_batch(
    args: tuple[Any, ...], kwargs: dict[str, Any], batch: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``batch=`` added to the inputs: a mapping as keywords, a tuple or list as positional
    inputs, anything else as one positional input."""
    if batch is None:
        return args, kwargs
    if isinstance(batch, Mapping):
        clash = sorted(set(batch) & set(kwargs))
        if clash:
            raise ValueError(f"memory(): {clash} given both in batch= and as keyword inputs")
        return args, {**kwargs, **batch}
    if isinstance(batch, (tuple, list)):
        return (*args, *batch), kwargs
    return (*args, batch), kwargs


def refuse_sharded(params: list[torch.Tensor]) -> None:
    """A ValueError for DTensor parameters: the step is measured on one device."""
    dtensor = getattr(sys.modules.get("torch.distributed.tensor"), "DTensor", None)
    if dtensor is None:
        return
    sharded = next((p for p in params if isinstance(p, dtensor)), None)
    if sharded is not None:
        raise ValueError(
            "memory() measures a model on one device; this one holds DTensor parameters "
            f"({tuple(sharded.placements)} on mesh {tuple(sharded.device_mesh.shape)}). "
            "tx.walk(model) gives each module's bytes per rank (node.bytes_local); measure the "
            "model before fully_shard / distribute_tensor for its activations"
        )


def unique(tensors: Iterator[torch.Tensor]) -> list[torch.Tensor]:
    """Each tensor once (a tied weight is one tensor), in order."""
    seen: set[int] = set()
    return [t for t in tensors if not (id(t) in seen or seen.add(id(t)))]  # type: ignore[func-returns-value]


def values_on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Every tensor holds values on the CPU (not meta, not a GPU's memory to spend)."""
    return bool(tensors) and all(t.device.type == "cpu" for t in tensors)
