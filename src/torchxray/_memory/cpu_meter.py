"""Live bytes of a real run on the CPU, which has no allocator counters to read: a dispatch mode
sees every op, counts each new storage an op returns while it is alive, and a finalizer on the
storage's Python object says when it is freed (torch keeps one Python object per storage for as
long as the storage lives, so the finalizer runs when autograd, a cache or the caller lets go).

It offers what `_memory.real.CudaMeter` offers (`read`, `reset`, `warm`, `release`), so the real
step (`_memory.real.measure`) runs unchanged on the CPU: `tx.memory` uses it where fake tensors
cannot run a model's data-dependent ops. A storage an op returns that one of its inputs already
had (an in-place op, a view) is not new and not counted; storages alive before the run (weights,
inputs) are the caller's to add, as the allocator's readings leave them to it too.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["CpuMeter"]


def _key(t: torch.Tensor) -> Any:
    try:
        return t.untyped_storage()
    except Exception:  # a wrapper subclass without a storage of its own
        return None


class CpuMeter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.peak = 0
        self.alive: dict[int, int] = {}  # storage identity -> bytes

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        produced = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not produced:
            return out
        known = {
            st._cdata
            for t in pytree.tree_leaves((args, kwargs))
            if isinstance(t, torch.Tensor) and (st := _key(t)) is not None
        }
        for t in produced:
            st = _key(t)
            if st is None or t.device.type != "cpu":
                continue
            key = st._cdata
            if key in known or key in self.alive:
                continue
            nbytes = st.nbytes()
            self.alive[key] = nbytes
            self.now += nbytes
            self.peak = max(self.peak, self.now)
            weakref.finalize(st, self._freed, key)
        return out

    def _freed(self, key: int) -> None:
        self.now -= self.alive.pop(key, 0)

    # -- what `_memory.real.measure` reads, as from the CUDA allocator -------------------------
    def read(self) -> tuple[int, int]:
        return self.now, self.peak

    def reset(self) -> None:
        self.peak = self.now

    def warm(self, dtypes: set[torch.dtype]) -> None:
        pass  # no workspace to make ahead on the CPU

    def release(self) -> None:
        pass  # nothing cached: freed storages went back to the system as they died
