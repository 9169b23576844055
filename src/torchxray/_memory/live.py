"""Live bytes over a fake run: every tensor an op makes is seen by a dispatch mode, its storage
counted once while any tensor object on it lives, and freed when the last one is collected.

FakeTensors are Python objects whose lifetime follows their C++ tensor (torch keeps a subclass's
PyObject alive while C++ still holds the tensor, e.g. in autograd's saved variables), so a
finalizer on each tensor object says when autograd, a cache or the user's code let go of it.
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["LiveBytes", "storage_key"]


def storage_key(t: torch.Tensor) -> tuple[int, int]:
    """(identity, bytes) of the storage behind `t`: views of one storage share it. A tensor
    without a plain storage (a wrapper subclass) counts as its own elements."""
    try:
        st = t.untyped_storage()
        return st._cdata, st.nbytes()
    except Exception:
        return id(t), t.numel() * t.element_size()


class LiveBytes(TorchDispatchMode):
    """Sum of live storages, its running maximum, and the maximum within each open span
    (`enter`/`leave`, one per module call): a module's peak is the highest total while its
    forward ran."""

    def __init__(self) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        self.refs: dict[int, list[int]] = {}  # storage -> [tensor objects alive, bytes]
        self.spans: list[int] = []  # running maximum of each open span, innermost last
        # Inference: weights made fake when first met (`_memory.weights.LazyWeights`), their bytes
        # counted from the start.
        self.lazy: Any = None
        self.held: set[int] = set()  # their storages

    def start(self, nbytes: int) -> None:
        """Bytes alive from the start without tensors tracked yet (lazily made weights)."""
        self.live += nbytes
        self.peak = max(self.peak, self.live)

    def hold(self, t: torch.Tensor) -> None:
        """A tensor whose bytes `start` already counted: alive until the run ends."""
        key, nbytes = storage_key(t)
        self.held.add(key)
        entry = self.refs.get(key)
        if entry is None:
            self.refs[key] = [1, nbytes]  # one count held for good: never released
        else:
            entry[0] += 1

    def track(self, t: torch.Tensor) -> None:
        key, nbytes = storage_key(t)
        entry = self.refs.get(key)
        if entry is None:
            entry = self.refs[key] = [0, nbytes]
            self.live += nbytes
            if self.live > self.peak:
                self.peak = self.live
            if self.spans and self.live > self.spans[-1]:
                self.spans[-1] = self.live
        entry[0] += 1
        weakref.finalize(t, self._release, key)

    def _release(self, key: int) -> None:
        entry = self.refs.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] <= 0:
            del self.refs[key]
            self.live -= entry[1]

    def reach(self, total: int) -> None:
        """A replayed block's recorded peak (`_memory.memo`): the total it rose to, counted for
        the run and the innermost open span as if its tensors had been made."""
        if total > self.peak:
            self.peak = total
        if self.spans and total > self.spans[-1]:
            self.spans[-1] = total

    def enter(self) -> None:
        self.spans.append(self.live)

    def leave(self) -> int:
        """Close the innermost span; its maximum also counts for the span around it."""
        top = self.spans.pop()
        if self.spans and top > self.spans[-1]:
            self.spans[-1] = top
        return top

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.lazy is not None:
            args, kwargs = self.lazy.lift(args, kwargs)
        out = func(*args, **kwargs)
        for leaf in pytree.tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.track(leaf)
        return out
