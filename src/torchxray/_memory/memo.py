"""Repeated identical blocks in a fake memory trace (`_memory.trace`): run twice, then replayed.

The blocks, and when a call of one runs or is replayed, are the shared memo's (`_fake.memo`, as
in the probe): the same signatures (class, forward, plain attributes, parameter metadata,
children; transformers' decoder layers up to their cache index) and the same input metadata.
Fake tensors hold no data, so such a block's bytes depend only on that metadata, up to what the
live total (`_memory.live`) sees of the world outside the block. A block is therefore recorded as
offsets from the live total when it was entered: the highest total within its forward and within
each descendant's, the total when it returned, and what it left alive: its outputs and, for a
Hugging Face cache, its own cache slot.

Nothing else may change. A recording is refused (the block runs every time) when the block freed a
storage that was alive before it, left alive one that is neither an output nor its cache slot (a
tensor cached on a module, say), returned a view of an input or two outputs sharing a storage, or
changed another slot of the cache. Two recorded calls must agree field by field (for transformers'
layers, two of different cache indices) before the rest are replayed: the replay raises the live
total to the recorded peak, makes fresh fake outputs (and cache slot tensors) of the recorded
metadata, which the live total then counts and frees as any other tensor, and writes the
descendants' peaks under its own path. `tests/test_memory_memo.py` checks the result equals the
full trace, field by field.

Only forwards without autograd are replayed: a training step's backward walks the graph each
block builds, which a replay does not have, so `training=True` traces every block.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import _disable_current_modes

from .._fake.memo import BlockCall, BlockMemo, meta
from .._fake.memo_cache import PLAIN, replay_slots, slot_effects
from .._fake.mode import new_fake
from .live import LiveBytes, storage_key

__all__ = ["StepMemo"]

_MISSING = object()


def _fresh_bytes(t: torch.Tensor) -> int:
    """Bytes of the storage `torch.empty_strided` gives a tensor of `t`'s shape and strides."""
    if t.numel() == 0:
        return 0
    span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return span * t.element_size()


def _slot_tensors(slot: Any) -> Iterator[torch.Tensor]:
    for v in vars(slot).values():
        if isinstance(v, torch.Tensor):
            yield v
        elif type(v) in (list, tuple):
            yield from (x for x in v if isinstance(x, torch.Tensor))


class _Entry:
    __slots__ = ("spec", "metas", "top", "end", "events", "effects", "index", "confirmed")

    def __init__(
        self,
        spec: Any,
        metas: list[Any],
        top: int,
        end: int,
        events: list[Any],
        effects: list[tuple[dict[str, Any], Hashable]],
        index: int | None,
    ) -> None:
        self.spec, self.metas, self.top, self.end = spec, metas, top, end
        self.events = events  # (descendant path below the block, its peak - live at entry)
        self.effects = effects  # per cache argument: its slot's state after (template, key)
        self.index = index
        self.confirmed = False

    def same(self, other: _Entry) -> bool:
        return (
            str(self.spec) == str(other.spec)
            and self.metas == other.metas
            and (self.top, self.end) == (other.top, other.end)
            and self.events == other.events
            and [k for _, k in self.effects] == [k for _, k in other.effects]
        )

    def outputs(self, make: Callable[..., torch.Tensor]) -> Any:
        # Fresh fakes every time: the live total counts each replay's outputs as new storages.
        leaves = [make(*m) if isinstance(m, tuple) else m for m in self.metas]
        return pytree.tree_unflatten(leaves, self.spec)


class StepMemo(BlockMemo):
    """Stubs on the outermost repeated blocks of a fake step (`install` puts them on for the
    run); `stack` is the trace's module stack (open paths, peaks, and its `log` of peaks while a
    block is recorded), `live` its live total. Every entry needs a second call that agrees with
    it before any replay, and a call that could not be recorded refuses its key."""

    retry_unremembered = False
    replay_same_index = False

    def __init__(
        self,
        model: nn.Module,
        modules: list[tuple[str, nn.Module]],
        stack: Any,
        live: LiveBytes,
        fake_mode: Any,
    ) -> None:
        super().__init__(model, {id(m): p for p, m in modules})
        self.stack, self.live, self.fake_mode = stack, live, fake_mode
        self.modules = modules

    @contextmanager
    def install(self) -> Iterator[None]:
        """Each stubbed module's `forward` routed through the memo for the run, put back after."""
        done: list[tuple[nn.Module, Any]] = []
        try:
            for _, m, stub in self.make_stubs(self.modules):
                d = vars(m)
                done.append((m, d.get("forward", _MISSING)))
                d["forward"] = stub
            yield
        finally:
            for m, was in done:
                if was is _MISSING:
                    del vars(m)["forward"]
                else:
                    vars(m)["forward"] = was

    def here(self, path: str) -> str | None:
        """`path` when it is the trace's innermost open call, without autograd (a training
        step's backward walks the graph each block builds, which a replay does not have)."""
        stack = self.stack
        if not stack.open or stack.open[-1] != path or torch.is_grad_enabled():
            return None
        return path

    def begin(self, here: str, call: BlockCall) -> Any:
        live, stack = self.live, self.stack
        start, refs = live.live, dict(live.refs)
        outer = stack.log is not None
        if not outer:
            stack.log = []
        return start, refs, outer, len(stack.log)

    def failed(self, token: Any) -> None:
        if not token[2]:
            self.stack.log = None

    def end(
        self, here: str, token: Any, result: Any, call: BlockCall, before: list[Any]
    ) -> _Entry | None:
        start, refs, outer, first = token
        try:
            return self._describe(here, result, start, refs, call, before, first)
        finally:
            if not outer:
                self.stack.log = None

    def _describe(
        self,
        path: str,
        result: Any,
        start: int,
        refs: dict[int, Any],
        call: BlockCall,
        before: list[Any],
        first: int,
    ) -> _Entry | None:
        live = self.live
        now = live.refs
        if any(now.get(k) is not e for k, e in refs.items()):
            return None  # freed a storage it did not make
        # Weights made fake as the block met them (`LazyWeights`) were counted from the start.
        made = {k for k, e in now.items() if refs.get(k) is not e and k not in live.held}
        left: set[int] = set()

        def own(t: torch.Tensor) -> bool:  # a storage the block made, as a fresh fake would be
            key, nbytes = storage_key(t)
            ok = key in made and key not in left and nbytes == _fresh_bytes(t)
            left.add(key)
            return ok and int(t.storage_offset()) == 0

        leaves, spec = pytree.tree_flatten(result)
        metas: list[Any] = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                # A fake tensor: a subclass (a DTensor) would not be remade as one.
                if type(leaf) is not FakeTensor or not own(leaf):
                    return None
                metas.append(meta(leaf))
            elif isinstance(leaf, PLAIN):
                metas.append(leaf)
            else:
                return None
        effects = slot_effects(
            call.caches, before, call.index, lambda slot: all(own(t) for t in _slot_tensors(slot))
        )
        if effects is None:
            return None
        if left != made:
            return None  # something else of its making is still alive (a cached tensor)
        prefix, cut = path + ".", len(path)
        events = []
        for p, top in self.stack.log[first:]:
            if not p.startswith(prefix):
                return None  # a module outside the block was called from inside it
            events.append((p[cut:], top - start))
        return _Entry(
            spec, metas, live.spans[-1] - start, live.live - start, events, effects, call.index
        )

    def replay(self, here: str, entry: _Entry, call: BlockCall) -> Any:
        path = here
        live, stack = self.live, self.stack
        start = live.live
        live.reach(start + entry.top)
        peaks, log = stack.trace.peaks, stack.log
        for rel, top in entry.events:
            p, v = path + rel, start + top
            if v > peaks.get(p, 0):
                peaks[p] = v
            if log is not None:
                log.append((p, v))
        made: list[torch.Tensor] = []
        fake_mode = self.fake_mode

        def make(shape: Any, stride: Any, dtype: torch.dtype, device: torch.device) -> Any:
            made.append(new_fake(fake_mode, shape, stride, dtype, device))  # counted below
            return made[-1]

        with _disable_current_modes():
            out = entry.outputs(make)
            replay_slots(call.caches, entry.effects, call.index, make)
        for t in made:
            live.track(t)
        return out
