"""What a probe does before the forward: the model's device, refusing uninitialised lazy modules,
and the example inputs turned into fake views (fake mode) on the model's device (never the model)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .records import ProbeError
from .run import ProbeRun

__all__ = ["first_lazy", "model_device", "prepare_inputs"]


def model_device(model: nn.Module) -> torch.device:
    """The device of the first parameter (else buffer); CPU for a model without tensors."""
    for param in model.parameters():
        return param.device
    for buffer in model.buffers():
        return buffer.device
    return torch.device("cpu")


def first_lazy(run: ProbeRun) -> ProbeError | None:
    """Lazy modules initialise themselves on their first forward, which would change the model
    (and, under fake tensors, give it fake parameters): refuse instead."""
    path = run.lazy
    if path is not None:
        return ProbeError(
            path=path,
            cls=run.names[path],
            exc_type="ValueError",
            message="this lazy module has uninitialised parameters; a probe must not "
            "initialise them because that changes the model",
            input_shapes=(),
            hint="run the model once yourself (model(*example_inputs)) to initialise its lazy "
            "modules, then probe it",
        )
    return None


def prepare_inputs(
    run: ProbeRun, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    leaves, spec = pytree.tree_flatten((args, kwargs))
    if not any(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return args, kwargs
    device = run.device
    moved: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            tensor: torch.Tensor = leaf
            if run.fake_mode is not None:
                # A fake view of the input (meta inputs included): no copy, whatever its size.
                tensor = run.fake_mode.from_tensor(tensor)
            if tensor.device != device:
                tensor = tensor.to(device)
            leaf = tensor
        moved.append(leaf)
    return pytree.tree_unflatten(moved, spec)  # type: ignore[no-any-return]
