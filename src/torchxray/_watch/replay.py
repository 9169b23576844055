"""The step a NaN/Inf first appears in, run once more with every module checked.

Why: checking every module's output and output gradient costs a pass over every activation,
10-25% of a step on CPU (bench/README.md), too much for every step. So the steps that are
checked (the sampled ones, or every step with ``check_every_step``) are checked from the
gradients' norms alone (one fused ``_foreach_norm``), which tells the step but not the module; on that step, before ``optimizer.step()`` changes a weight,
``Capture`` holds what the forward was given (its arguments, the random state it started from)
and the gradient that reached the model's outputs, and ``replay`` runs that forward and backward
again with the checks armed. The backward goes through ``torch.autograd.grad``, so the user's
``.grad`` is not touched; buffers (BatchNorm's running statistics) are copied back and the random
state is the caller's again afterwards. A model whose forward depends on anything else (a counter
it keeps, a cache) may not fail the same way twice: the step is still right, the module is then
the one the gradients' norms point to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_leaves

__all__ = ["Call", "Capture", "replay"]


@dataclass
class Call:
    """One forward of the model in this step (gradient accumulation makes several)."""

    args: Any
    kwargs: Any
    rng: torch.Tensor
    cuda_rng: list[tuple[int, torch.Tensor]]
    grads: dict[int, torch.Tensor] = field(default_factory=dict)  # output leaf index -> grad


def _cuda_devices(model: nn.Module) -> list[int]:
    return sorted({p.device.index or 0 for p in model.parameters() if p.device.type == "cuda"})


class Capture:
    """The root module's pre-hook and hook: what ``replay`` needs of this step's forwards."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.enabled = True
        self._devices: list[int] | None = None

    def before(self, model: nn.Module, args: Any, kwargs: Any) -> None:
        if not self.enabled or not torch.is_grad_enabled():
            return
        if self._devices is None:
            self._devices = _cuda_devices(model)
        cuda = [(d, torch.cuda.get_rng_state(d)) for d in self._devices]
        self.calls.append(Call(args, kwargs, torch.get_rng_state(), cuda))

    def after(self, model: nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        if not self.enabled or not self.calls or not torch.is_grad_enabled():
            return
        call = self.calls[-1]
        if type(output) is torch.Tensor:  # the common case, without a pytree walk: every step
            if output.requires_grad and output.is_floating_point():
                output.register_hook(_Keep(call, 0))
            return
        for i, leaf in enumerate(_grad_leaves(output)):
            if leaf is not None:
                leaf.register_hook(_Keep(call, i))

    def clear(self) -> None:
        self.calls = []


class _Keep:
    __slots__ = ("call", "index")

    def __init__(self, call: Call, index: int) -> None:
        self.call, self.index = call, index

    def __call__(self, grad: torch.Tensor) -> None:
        self.call.grads[self.index] = grad


def _grad_leaves(output: Any) -> list[torch.Tensor | None]:
    return [
        t if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point() else None
        for t in tree_leaves(output)
    ]


def replay(model: nn.Module, calls: list[Call], arm: Callable[[bool], None]) -> list[str]:
    """Run ``calls`` again with the checks armed (``arm(True)``, then ``arm(False)``); returns
    the names of the weights whose gradient is non-finite in the replay."""
    weights = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    devices = sorted({d for c in calls for d, _ in c.cuda_rng})
    bad: list[str] = []
    arm(True)
    try:
        with torch.random.fork_rng(devices=devices), torch.enable_grad():
            for call in calls:
                torch.set_rng_state(call.rng)
                for d, state in call.cuda_rng:
                    torch.cuda.set_rng_state(state, d)
                out = model(*call.args, **call.kwargs)
                leaves = _grad_leaves(out)
                pairs: list[tuple[torch.Tensor, torch.Tensor]] = []
                for i, g in call.grads.items():
                    leaf = leaves[i] if i < len(leaves) else None
                    if leaf is not None:
                        pairs.append((leaf, g))
                if not pairs or not weights:
                    continue
                got = torch.autograd.grad(
                    [t for t, _ in pairs],
                    [p for _, p in weights],
                    grad_outputs=[g for _, g in pairs],
                    allow_unused=True,
                )
                for (name, _), g in zip(weights, got, strict=True):
                    if g is not None and not bool(torch.isfinite(g).all()):
                        bad.append(name)
                if bad:
                    break
    finally:
        arm(False)
        with torch.no_grad():
            for b, v in buffers:
                b.copy_(v)
    return bad
