"""FSDP2 (`fully_shard`) models in a probe: FSDP's bookkeeping put back as it was.

Both probes run FSDP's own hooks: before a unit's forward they all-gather its shards and put
plain unsharded parameters on its modules, after it they put the sharded DTensors back (except on
the root, which stays gathered for the backward). The real probe therefore works on an FSDP2
model, on a fake process group too (`init_process_group("fake", ...)`: its collectives move no
data, so shapes and times are those of the model but values are whatever the gathered buffers
held; the fake probe is the one to read shapes from, and `nonfinite` means nothing there).

What broke the real probe ("aten.addmm.default got mixed torch.Tensor and DTensor") was a
*fake* probe before it, and a user's own forward after one just as much. The fake run gathered
under FakeTensorMode, and FSDP kept what it made: its units marked unsharded, holding fake
unsharded parameters and gather buffers, while the probe put the sharded DTensors back on the
modules (`_fake.state.undo_fake_state`). The next real forward then skipped its all-gather (the
unit said it was gathered) and ran its modules on DTensor parameters with plain inputs.

After a real probe, the units that were sharded before it are sharded again (`fsdp_resharded`,
with FSDP's public `FSDPModule.reshard()`): the root would otherwise stay gathered, its full
parameters held on every rank and shown by `tx.walk` as plain tensors.

`fsdp_kept` (the fake probe) first completes FSDP's lazy initialisation for real, as the first
forward would: it registers state-dict hooks on the units (undone after each fake run, every
probe would register them again) and re-pads a shard replaced since `fully_shard` (under
FakeTensorMode, a fake tensor in the DTensor parameter itself). Then it snapshots the attributes
of every FSDP state, parameter group and parameter (and the contents of the lists, sets and
dicts among them, which FSDP changes in place) and puts them back after the fake run.

Decision, on this evidence: the real probe needs no refusal on a fake process group; it runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from torch import nn

__all__ = ["fsdp_kept", "fsdp_resharded"]


def _units(modules: list[nn.Module], classes: Iterable[type]) -> list[tuple[nn.Module, Any]]:
    """(module, its FSDP state) for each `fully_shard` unit among `modules`, in their order;
    `classes`: those of `modules`, each once (the probe's walk has them)."""
    mod = sys.modules.get("torch.distributed.fsdp")  # no FSDP2 model without it imported
    cls = getattr(mod, "FSDPModule", None) if mod is not None else None
    # fully_shard gives each unit a class of its own: on a model without units, nothing more is
    # read, at any size.
    if cls is None or not any(issubclass(t, cls) for t in classes):
        return []
    return [(m, m._get_fsdp_state()) for m in modules if isinstance(m, cls)]


def _states(modules: list[nn.Module], classes: Iterable[type]) -> list[Any]:
    states: dict[int, Any] = {}
    for _, state in _units(modules, classes):  # pre-order: an outer unit before the units inside it
        states.setdefault(id(state), state)
    return list(states.values())


def _objects(states: list[Any]) -> list[Any]:
    out: dict[int, Any] = {}
    for state in states:
        for obj in (state, getattr(state, "_state_ctx", None)):
            if obj is not None:
                out.setdefault(id(obj), obj)
        for group in getattr(state, "_fsdp_param_groups", ()):
            out.setdefault(id(group), group)
            for param in getattr(group, "fsdp_params", ()):
                out.setdefault(id(param), param)
    return list(out.values())


def _snapshot(obj: Any) -> tuple[Any, dict[str, Any], list[tuple[Any, Any]]]:
    attrs = dict(vars(obj))
    inner = []
    for v in attrs.values():
        if type(v) is list:
            inner.append((v, list(v)))
        elif type(v) in (set, dict):
            inner.append((v, v.copy()))
    return obj, attrs, inner


def _restore(snap: tuple[Any, dict[str, Any], list[tuple[Any, Any]]]) -> None:
    obj, attrs, inner = snap
    d = vars(obj)
    d.clear()
    d.update(attrs)
    for container, was in inner:
        if type(container) is list:
            container[:] = was
        else:
            container.clear()
            container.update(was)


@contextlib.contextmanager
def fsdp_kept(modules: list[nn.Module], classes: Iterable[type]) -> Iterator[None]:
    """FSDP's state in `modules` exactly as before, after whatever a fake run does to it."""
    states = _states(modules, classes)
    if not states:
        yield
        return
    for state in states:
        if getattr(state, "_is_root", False) is None:
            # What the first real forward does; if it raises (a unit run alone before its root),
            # the probe's forward raises the same error, localised.
            with contextlib.suppress(Exception):
                state._lazy_init()
    snaps = [_snapshot(obj) for obj in _objects(states)]
    try:
        yield
    finally:
        for snap in snaps:
            _restore(snap)


@contextlib.contextmanager
def fsdp_resharded(modules: list[nn.Module], classes: Iterable[type]) -> Iterator[None]:
    """The units sharded before a real run resharded after it, as a forward left them."""
    sharded: list[Any] = []  # FSDPModule units (their class is made at fully_shard time)
    for m, state in _units(modules, classes):
        groups = getattr(state, "_fsdp_param_groups", ())
        if groups and all(getattr(g, "is_sharded", False) for g in groups):
            sharded.append(m)
    try:
        yield
    finally:
        for m in sharded:
            with contextlib.suppress(Exception):  # a forward that failed midway: FSDP's own state
                m.reshard()
