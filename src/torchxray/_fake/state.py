"""What a fake run may leave on the model, put back: the tensors a forward stored on its modules
(`snapshot_state` before, `undo_fake_state` after) and the train/eval flags (`set_training`)."""

from __future__ import annotations

from typing import Any

from torch import nn

__all__ = ["State", "set_training", "snapshot_state", "undo_fake_state"]

State = tuple[nn.Module, dict[str, Any], dict[str, Any], dict[str, Any]]


def snapshot_state(modules: list[nn.Module]) -> list[State]:
    """Each module's parameters, buffers and attributes as they are now (shallow copies)."""
    return [(m, dict(m._parameters), dict(m._buffers), dict(vars(m))) for m in modules]


def undo_fake_state(snapshot: list[State]) -> None:
    """A forward that caches tensors on its module (a rotary table grown to a new length, a
    register_buffer call) would leave *fake* tensors in the model after a fake run: put back
    what was there before for every module where a fake tensor turned up."""
    from torch._subclasses.fake_tensor import FakeTensor

    # First the types of every value, collected by C loops (map/set.update): in the usual case no
    # fake tensor stayed anywhere and nothing more is read. Per module and per value in Python,
    # this check took a fifth of a 30,000-module fake probe.
    seen: set[type] = set()
    for m, _, _, _ in snapshot:
        seen.update(map(type, m._parameters.values()))
        seen.update(map(type, m._buffers.values()))
        seen.update(map(type, vars(m).values()))
    if not any(issubclass(t, FakeTensor) for t in seen):
        return
    for m, params, buffers, attrs in snapshot:
        current = (*m._parameters.values(), *m._buffers.values(), *vars(m).values())
        if not any(isinstance(v, FakeTensor) for v in current):
            continue
        m._parameters.clear()
        m._parameters.update(params)
        m._buffers.clear()
        m._buffers.update(buffers)
        for key in [k for k, v in vars(m).items() if isinstance(v, FakeTensor)]:
            if key in attrs:
                m.__dict__[key] = attrs[key]
            else:
                del m.__dict__[key]


def set_training(m: nn.Module, training: bool) -> None:
    """The flag itself rather than ``.train()``: a user's override may do more than flip flags,
    and a run must put back exactly what was there."""
    if "training" in m.__dict__:  # the usual case: skip nn.Module.__setattr__, a call per module
        m.__dict__["training"] = training
    else:  # e.g. a ScriptModule keeps the flag in C++ behind its own __setattr__
        m.training = training
