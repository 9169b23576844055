"""Optimizer state bytes per parameter: by name (a fixed number of parameter-shaped tensors), or
read from a `torch.optim.Optimizer` instance: its state when it has taken a step, else the state
its own `step()` creates on fake copies of its parameters (its class and every param group's
options: SGD without momentum keeps nothing, Adam with amsgrad three tensors)."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["NAMES", "state_bytes"]

# Parameter-shaped state tensors per trainable parameter, in the parameter's dtype.
NAMES: dict[str, int] = {
    "adamw": 2,  # exp_avg, exp_avg_sq
    "adam": 2,
    "sgd": 1,  # momentum_buffer (SGD with momentum; torch.optim.SGD() without keeps none)
    "rmsprop": 1,  # square_avg
    "adagrad": 1,  # sum
}

# Scalar bookkeeping (Adam's step count): a few bytes per tensor, kept on the CPU by default.
_SKIP = frozenset({"step"})


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def state_bytes(optimizer: Any, params: list[torch.Tensor]) -> dict[int, int]:
    """{id(param): bytes of its optimizer state} for the trainable `params` (real tensors)."""
    if isinstance(optimizer, str):
        key = optimizer.lower()
        if key not in NAMES:
            names = ", ".join(repr(n) for n in NAMES)
            raise ValueError(
                f"unknown optimizer {optimizer!r}; use one of {names}, or pass the "
                "torch.optim.Optimizer instance itself to read its state layout"
            )
        k = NAMES[key]
        return {id(p): k * _nbytes(p) for p in params}
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a name ({', '.join(NAMES)}) or a torch.optim.Optimizer, "
            f"got {type(optimizer).__name__}"
        )
    return _instance_bytes(optimizer, {id(p) for p in params})


def _instance_bytes(optimizer: torch.optim.Optimizer, wanted: set[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    held = [p for g in optimizer.param_groups for p in g["params"]]
    stepped = {id(p) for p in held if optimizer.state.get(p)}
    for p in held:
        if id(p) in stepped and id(p) in wanted:
            out[id(p)] = _state_of(optimizer.state[p])
    todo = [p for p in held if id(p) not in stepped and id(p) in wanted and p.requires_grad]
    if todo:
        out.update(_fake_step(optimizer, {id(p) for p in todo}))
    return out


def _state_of(state: dict[str, Any]) -> int:
    return sum(
        _nbytes(v) for k, v in state.items() if isinstance(v, torch.Tensor) and k not in _SKIP
    )


def _fake_step(optimizer: torch.optim.Optimizer, todo: set[int]) -> dict[int, int]:
    """The state a first `step()` creates, on a new optimizer of the same class over fake
    copies of the parameters (same groups, same options): the user's optimizer is not touched."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = FakeTensorMode(allow_non_fake_inputs=False)
    groups, origin = [], []
    for g in optimizer.param_groups:
        fakes = []
        for p in g["params"]:
            if id(p) in todo:
                f = fake_mode.from_tensor(p.detach()).requires_grad_(True)
                fakes.append(f)
                origin.append((id(p), f))
        if fakes:
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": fakes})
    with fake_mode:
        for _, f in origin:
            f.grad = torch.zeros_like(f)
        cls: Any = type(optimizer)  # a subclass, whose own signature takes options as keywords
        try:
            try:
                twin = cls(groups, **optimizer.defaults)
            except TypeError:
                twin = cls(groups)
            twin.step()
        except Exception as exc:
            raise ValueError(
                f"could not read the state layout of {cls.__name__}: making one and taking a "
                f"step on fake parameters raised {type(exc).__name__}: {exc}. Pass its name "
                f"instead (one of {', '.join(NAMES)})"
            ) from exc
        return {pid: _state_of(twin.state.get(f, {})) for pid, f in origin}
