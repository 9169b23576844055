"""The optimizer's side of a watch: finding the torch optimizer inside a trainer's wrapper,
checking it holds the model's weights, and keeping it true to the model across an edit made
between steps (``migrate``).

An edit rebuilds a module and copies the weights whose name and shape still match into the new
module's parameters (``PatchLog.edit``), so the optimizer would go on updating the old tensors,
no longer in the model. ``migrate`` swaps each old parameter for its new counterpart (same name
under the patched path, same shape and dtype) in the optimizer's groups and moves its state
(momentum, Adam's moments) along. It refuses, and the edit is undone, where that is not possible:
a weight with no counterpart (the shape changed, it was removed) or a new weight the optimizer
does not hold (it would never train).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.optim import Optimizer

__all__ = ["StaleOptimizer", "check_holds", "migrate", "unwrap"]


class StaleOptimizer(RuntimeError):
    """An edit that would leave the optimizer updating tensors the model no longer has."""


def unwrap(opt: Any) -> Optimizer:
    """The ``torch.optim.Optimizer`` inside accelerate's, Lightning's or a user's wrapper."""
    # accelerate's AcceleratedOptimizer is an Optimizer itself, around the one that steps.
    for _ in range(8):
        inner = getattr(opt, "optimizer", None) or getattr(opt, "_optimizer", None)
        if inner is None or inner is opt or not hasattr(inner, "param_groups"):
            break
        opt = inner
    if not isinstance(opt, Optimizer):
        raise TypeError(
            f"watch(optimizer=...) needs a torch.optim.Optimizer (or a wrapper with .optimizer), "
            f"got {type(opt).__name__}"
        )
    return opt


def held(opt: Optimizer) -> set[int]:
    return {id(p) for g in opt.param_groups for p in g["params"]}


def check_holds(model: nn.Module, opt: Optimizer) -> None:
    mine = {id(p) for p in model.parameters()}
    theirs = held(opt)
    if not mine & theirs:
        raise ValueError(
            f"the optimizer ({type(opt).__name__}, {len(theirs)} tensors) holds none of the "
            f"model's {len(mine)} parameters: build it from this model, e.g. "
            "torch.optim.AdamW(model.parameters()), or watch the model it was built for"
        )


def snapshot(model: nn.Module) -> dict[str, nn.Parameter]:
    return dict(model.named_parameters())


def migrate(opt: Optimizer, before: dict[str, nn.Parameter], model: nn.Module, what: str) -> int:
    """Make ``opt`` hold the model's parameters again after an edit (``before``: the named
    parameters before it); returns how many were swapped. Raises ``StaleOptimizer`` naming the
    weights it cannot follow, changing nothing."""
    after = dict(model.named_parameters())
    now = {id(p) for p in after.values()}
    holds = held(opt)
    gone = {n: p for n, p in before.items() if id(p) not in now and id(p) in holds}
    fresh = {n: p for n, p in after.items() if id(p) not in holds and p.requires_grad}
    swaps: dict[int, nn.Parameter] = {}
    lost: list[str] = []
    for name, old in gone.items():
        new = after.get(name)
        if new is None or new.shape != old.shape or new.dtype != old.dtype:
            lost.append(name)
        else:
            swaps[id(old)] = new
    untrained = [n for n, p in fresh.items() if all(p is not q for q in swaps.values())]
    if lost or untrained:
        parts = []
        if lost:
            parts.append(f"the optimizer holds {_names(lost)}, which the edit removes or reshapes")
        if untrained:
            parts.append(f"the edit adds {_names(untrained)}, which the optimizer does not hold")
        raise StaleOptimizer(
            f"{what} refused while training: {'; '.join(parts)}. It would keep updating stale "
            "tensors (or never train new ones). Stop the loop, apply the edit, then make a new "
            "optimizer from model.parameters() and watch again"
        )
    for group in opt.param_groups:
        group["params"] = [swaps.get(id(p), p) for p in group["params"]]
    for old_id, new in swaps.items():
        old = next(p for p in gone.values() if id(p) == old_id)
        state = opt.state.pop(old, None)
        if state is not None:
            opt.state[new] = {k: _moved(v, new) for k, v in state.items()}
    return len(swaps)


def _moved(value: Any, like: torch.Tensor) -> Any:
    if isinstance(value, torch.Tensor) and value.shape == like.shape:
        return value.to(like.device)
    return value


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"{len(names)} weight{'s' if len(names) != 1 else ''} ({shown})"
