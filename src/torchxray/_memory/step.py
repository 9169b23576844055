"""One fake step of a model for `tx.memory`: its weights made fake (all at once when autograd
needs fake leaves or accelerate offloads them, else as ops meet them), its inputs made fake on
the device the weights run on, and the step traced (`_memory.trace.trace_step`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .._fake.mode import FakeMode  # FakeTensorMode, with CPU grouped_mm (MoE experts)
from .._fake.offload import execution_devices, offload_paused
from .trace import StepTrace, trace_step
from .weights import LazyWeights, fake_weights

__all__ = ["fake_step"]


def fake_step(
    model: nn.Module,
    modules: list[tuple[str, nn.Module]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    training: bool,
    memoise: bool,
) -> StepTrace:
    """One step of `model` on fake copies of its weights and inputs (`_memory.trace`); the
    model is left as it was."""
    # Non-fake inputs allowed: a tensor a forward makes with torch.tensor(...) or a cache
    # built before the run is converted when an op first meets it.
    fake_mode = FakeMode(allow_non_fake_inputs=True)
    devices = execution_devices([m for _, m in modules])  # offloaded weights: where they run
    # Each tensor under one name: `functional_call` ties the other names of a tied tensor
    # itself, and a module reached by two paths (a shared block) swapped under both names was
    # put back in the wrong order, leaving fake weights on the model.
    named = (*model.named_parameters(), *model.named_buffers())
    tensors: dict[str, torch.Tensor] | LazyWeights
    swap: dict[int, torch.Tensor] | None = None
    if training or devices:  # autograd needs fake leaves; offloaded weights move where they run
        tensors = fake_weights(named, fake_mode, devices, training)
        swap = {id(t): tensors[name] for name, t in named}
        first = next(iter(tensors.values()), None)
    else:
        tensors = LazyWeights(named, fake_mode)
        first = next(iter(tensors.real.values()), None)
    device = first.device if first is not None else torch.device("cpu")
    leaves, spec = pytree.tree_flatten((args, kwargs))
    moved = []
    for x in leaves:
        if isinstance(x, torch.Tensor):
            x = fake_mode.from_tensor(x)
            if x.device != device:
                with fake_mode:
                    x = x.to(device)
        moved.append(x)
    fargs, fkwargs = pytree.tree_unflatten(moved, spec)
    with offload_paused([m for _, m in modules]):
        trace = trace_step(
            model, modules, fake_mode, tensors, fargs, fkwargs, training, memoise, swap=swap
        )
    trace.device = str(device)
    return trace
