"""What a run may leave on the model, put back: the tensors a fake forward stored on its modules
(`snapshot_state` before, `undo_fake_state` after), what a real forward changed (`kept_state`:
buffer values updated in place, such as BatchNorm's running statistics in train mode, and
parameters, buffers or tensor attributes replaced) and the train/eval flags (`set_training`)."""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

__all__ = ["State", "kept_state", "set_training", "snapshot_state", "undo_fake_state"]

State = tuple[nn.Module, dict[str, Any], dict[str, Any], dict[str, Any]]

_PARAMS, _BUFFERS = operator.attrgetter("_parameters"), operator.attrgetter("_buffers")


def snapshot_state(modules: list[nn.Module]) -> list[State]:
    """Each module's parameters, buffers and attributes as they are now (shallow copies)."""
    return list(
        zip(
            modules,
            map(dict, map(_PARAMS, modules)),
            map(dict, map(_BUFFERS, modules)),
            map(dict, map(vars, modules)),
        )
    )


class _Compared(Exception):
    """A tensor was about to be compared by value: it is not the object the snapshot holds."""


class _TensorsByIdentity(TorchFunctionMode):
    """Any tensor operation raises `_Compared` (this thread only): the dict comparison in
    `unchanged` tells values apart by identity first, so a tensor it compares by value is one
    that was replaced (compared by value, an equal one-element tensor would pass)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise _Compared


def unchanged(snapshot: list[State]) -> bool:
    """Whether every module still holds the very tensors it held at `snapshot` (parameters,
    buffers and attributes, under the same names) and attributes equal to those it held: then no
    restore has anything to put back. One C comparison of the dicts against their copies, which
    share their keys and values (the identity test comes first, so only a replaced value is
    compared, and a replaced tensor ends the comparison: `_TensorsByIdentity`), rather than a
    comparison per module in Python, or even entry by entry in C loops, which took a quarter of
    a fake probe of 100,000 small modules (bench/README.md, "Figures behind choices")."""
    modules = [s[0] for s in snapshot]
    now = [*map(_PARAMS, modules), *map(_BUFFERS, modules), *map(vars, modules)]
    then = [*(s[1] for s in snapshot), *(s[2] for s in snapshot), *(s[3] for s in snapshot)]
    try:
        with _TensorsByIdentity():
            return now == then
    except Exception:  # noqa: BLE001 - _Compared, or a value whose == raises: look closer
        return False


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


@contextlib.contextmanager
def kept_state(
    modules: list[nn.Module],
    buffers: list[torch.Tensor],
    state: list[State] | None = None,
    fake: bool = False,
    checked: Callable[[], bool] | None = None,
    wrote: Callable[[torch.Tensor], None] | None = None,
) -> Iterator[None]:
    """Around a real run: buffer values copied back (a kernel may update one in place without
    moving its version counter: BatchNorm's running statistics), and parameters, buffers and
    tensor attributes a forward replaced put back. Buffers are a small part of a model.
    `state`: ``snapshot_state(modules)`` taken just now, if the caller has one. `fake`: around a
    fake run, `undo_fake_state` first, the one check that anything changed serving both.
    `checked`: says True once a run's `_trace.Trace` has compared and put back every attribute
    (the comparison, a C loop over every module, is then not made twice). `wrote`: told of each
    buffer whose values the run changed (BatchNorm's kernels update running statistics in
    place without saying so in their schema), before its values are put back."""
    if state is None:
        state = snapshot_state(modules)
    values = [(b, b.detach().clone()) for b in buffers]
    try:
        yield
    finally:
        same = (checked is not None and checked()) or unchanged(state)
        try:
            if fake and not same:
                undo_fake_state(state)
        finally:
            _put_back(() if same else state, values, wrote)


def _put_back(
    state: Any,
    values: list[tuple[torch.Tensor, torch.Tensor]],
    wrote: Callable[[torch.Tensor], None] | None = None,
) -> None:
    """What a forward replaced in `state`'s modules, then the buffers' values."""
    try:
        for m, ps, bs, attrs in state:
            dicts: tuple[tuple[dict[str, Any], dict[str, Any]], ...] = (
                (m._parameters, ps),
                (m._buffers, bs),
            )
            for now, before in dicts:
                if not isinstance(now, dict):  # a ScriptModule's C++-backed view: not replaced
                    continue
                if now.keys() != before.keys() or any(now[k] is not v for k, v in before.items()):
                    now.clear()
                    now.update(before)
            d = vars(m)
            for key in [k for k, v in d.items() if isinstance(v, torch.Tensor)]:
                if key not in attrs:
                    del d[key]
                elif attrs[key] is not d[key]:
                    d[key] = attrs[key]
    finally:
        with torch.no_grad():
            for b, v in values:
                if wrote is not None and not _equal(b, v):
                    wrote(b)
                b.copy_(v)


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.shape == b.shape and bool(torch.equal(a, b))
    except Exception:  # noqa: BLE001 - a subclass without equal: said as written
        return False
