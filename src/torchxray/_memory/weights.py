"""A model's weights for the memory trace: fake copies of its parameters and buffers (metadata
only), and each module's subtree sums of bytes, counting a tensor once per subtree.

A fake copy is made directly (a meta tensor of the same shape and strides wrapped as a
FakeTensor) where the weight owns its storage alone; `FakeTensorMode.from_tensor`, which keeps
storages shared between views (an order of magnitude slower: most of `tx.memory` on an 80-layer
model), is left for the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from .._fake.mode import new_fake
from .._tensors import stored_bytes

__all__ = ["LazyWeights", "fake_weights", "subtree_bytes"]


def _storage(t: torch.Tensor) -> tuple[int, int] | None:
    try:
        st = t.untyped_storage()
        return st._cdata, st.nbytes()
    except Exception:  # a wrapper subclass without a storage of its own
        return None


def _alone(t: torch.Tensor, storage: tuple[int, int] | None, uses: dict[int, int]) -> bool:
    """Whether `t` is a plain strided tensor spanning its whole storage, shared with no other."""
    if storage is None or uses.get(storage[0], 0) != 1 or t.storage_offset() != 0:
        return False
    if type(t) not in (torch.Tensor, nn.Parameter) or t.layout != torch.strided:
        return False
    span = 0 if t.numel() == 0 else 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return span * t.element_size() == storage[1]


def fake_weights(
    named: Iterable[tuple[str, torch.Tensor]],
    fake_mode: Any,
    devices: dict[int, torch.device],
    training: bool,
) -> dict[str, torch.Tensor]:
    """{name: fake} for every (name, tensor), tied names to one fake; `devices` moves an
    offloaded weight to where it runs; trainable parameters require grad when `training`."""
    pairs = list(named)
    storages: dict[int, tuple[int, int] | None] = {}
    uses: dict[int, int] = {}
    for _, t in pairs:
        if id(t) not in storages:
            st = storages[id(t)] = _storage(t)
            if st is not None:
                uses[st[0]] = uses.get(st[0], 0) + 1
    made: dict[int, torch.Tensor] = {}
    out: dict[str, torch.Tensor] = {}
    for name, t in pairs:
        fake = made.get(id(t))
        if fake is None:
            if _alone(t, storages[id(t)], uses):
                fake = new_fake(fake_mode, t.shape, t.stride(), t.dtype, t.device)
            else:
                fake = fake_mode.from_tensor(t.detach())  # a view of its metadata: no copy
            target = devices.get(id(t))
            if target is not None and fake.device != target:
                with fake_mode:
                    fake = fake.to(target)
            if training and isinstance(t, nn.Parameter) and t.requires_grad:
                fake.requires_grad_(True)
            made[id(t)] = fake
        out[name] = fake
    return out


def subtree_bytes(
    modules: list[tuple[str, nn.Module]], grad_ids: set[int], opt: dict[int, int]
) -> list[tuple[int, int, int, int]]:
    """Per module (as `modules`: each module object once): (params, buffers, grads, optimizer)
    bytes of its subtree, each tensor once, weights as they are stored (`_tensors.stored_bytes`), as ``m.parameters()`` and ``m.buffers()`` count them
    (a module shared by two parents counts under both)."""
    at = {id(m): i for i, (_, m) in enumerate(modules)}
    parents: list[list[int]] = [[] for _ in modules]
    for i, (_, m) in enumerate(modules):
        for child in m._modules.values():
            j = at.get(id(child)) if child is not None else None
            if j is not None and i not in parents[j]:
                parents[j].append(i)
    owners: dict[int, tuple[torch.Tensor, bool, list[int]]] = {}
    for i, (_, m) in enumerate(modules):
        for kind, tensors in ((True, m._parameters), (False, m._buffers)):
            for t in tensors.values():
                if t is not None and not is_lazy(t):  # uninitialised: no size to count
                    owners.setdefault(id(t), (t, kind, []))[2].append(i)
    sums = [[0, 0, 0, 0] for _ in modules]
    for key, (t, is_param, where) in owners.items():
        # What the tensor stores (a quantized weight's inner tensors); its gradient, were it
        # trained, takes the logical shape and dtype.
        nbytes = stored_bytes(t)
        grad = t.numel() * t.element_size() if key in grad_ids else 0
        state = opt.get(key, 0)
        seen: set[int] = set()
        todo = list(where)
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            todo.extend(parents[i])
            row = sums[i]
            if is_param:
                row[0] += nbytes
                row[2] += grad
                row[3] += state
            else:
                row[1] += nbytes
    return [(a, b, c, d) for a, b, c, d in sums]


class LazyWeights:
    """The weights of a forward without autograd made fake when an op first meets them, as the
    fake probe does, rather than all before the run: a replayed block (`_memory.memo`) never
    touches its own, and making 700 fakes of an 80-layer model was an eighth of its `tx.memory`.
    Their bytes count from the start (`base`, each storage once, as the fakes' would); `lift`
    hands an op the fake of each weight among its arguments, made once per weight."""

    def __init__(self, named: Iterable[tuple[str, torch.Tensor]], fake_mode: Any) -> None:
        self.fake_mode = fake_mode
        self.real: dict[int, torch.Tensor] = {}
        self.fakes: dict[int, torch.Tensor] = {}
        self.storages: dict[int, tuple[int, int] | None] = {}
        self.uses: dict[int, int] = {}
        self.held: Any = None  # LiveBytes.hold, set by the trace
        for _, t in named:
            if id(t) not in self.real:
                self.real[id(t)] = t
                st = self.storages[id(t)] = _storage(t)
                if st is not None:
                    self.uses[st[0]] = self.uses.get(st[0], 0) + 1
        sizes = {}
        for key, t in self.real.items():
            st = self.storages[key]
            if st is None:
                sizes[("t", key)] = t.numel() * t.element_size()
            else:
                sizes[("s", st[0])] = st[1]
        self.base = sum(sizes.values())

    def fake(self, t: torch.Tensor) -> torch.Tensor:
        key = id(t)
        fake = self.fakes.get(key)
        if fake is None:
            if _alone(t, self.storages[key], self.uses):
                fake = new_fake(self.fake_mode, t.shape, t.stride(), t.dtype, t.device)
            else:
                fake = self.fake_mode.from_tensor(t.detach())
            self.fakes[key] = fake
            self.held(fake)
        return fake

    def lift(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
        real = self.real
        if any(id(a) in real for a in args):
            args = tuple(self.fake(a) if id(a) in real else a for a in args)
        for name, v in kwargs.items():
            if id(v) in real:
                kwargs = {**kwargs, name: self.fake(v)}
        # One level into lists (torch.cat of weights, foreach ops).
        if any(type(a) in (list, tuple) and any(id(x) in real for x in a) for a in args):
            args = tuple(
                type(a)(self.fake(x) if id(x) in real else x for x in a)
                if type(a) in (list, tuple)
                else a
                for a in args
            )
        return args, kwargs
