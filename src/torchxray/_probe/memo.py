"""Memoising repeated identical blocks in a fake probe (80 identical decoder layers run once).

Which blocks and calls are interchangeable, and when a call runs or is replayed, is the shared
memo's (`_fake.memo`). What the probe remembers of a call that runs is its records: every
descendant call (inputs, outputs, FLOPs, site, caller, dataflow edges) and its outputs. A replay
returns the remembered outputs and copies the remembered records under its own path.
`tests/test_probe.py` and `tests/test_probe_memo_real.py` check that this equals a full probe.

An exact block's entry is replayed from its second call on; one repeated up to its cache index
must first be confirmed by a second index. A call that could not be remembered is tried again at
the next call of its key.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .._fake.memo import BlockCall, BlockMemo, meta
from .._fake.memo_cache import PLAIN, replay_slots, slot_effects
from .._fake.mode import fresh as new_tensor
from .calls import Call, Recorder
from .edges import (
    inner_edges,
    mark,
    replay_edges,
    replay_returns,
    return_refs,
    unmark,
    unmark_outputs,
)

__all__ = ["Memo"]


class _Entry:
    __slots__ = (
        "spec", "leaves", "metas", "descendants", "flops", "index", "effects", "confirmed",
        "returns",
    )  # fmt: skip

    def __init__(
        self,
        spec: Any,
        leaves: list[Any],
        descendants: list[Any],
        flops: int,
        index: int | None,
        effects: list[tuple[dict[str, Any], Hashable]],
    ) -> None:
        self.spec = spec
        self.leaves = leaves
        self.metas = [meta(t) if isinstance(t, torch.Tensor) else None for t in leaves]
        self.descendants = descendants
        self.flops = flops
        self.index = index  # the cache index of the block that ran (relaxed entries)
        # Per cache argument, in order: its slot's state after the call (template, key).
        self.effects = effects
        self.confirmed = index is None
        self.returns: Any = ()  # what each output leaf came from (`_probe.edges.return_refs`)

    def same(self, other: _Entry) -> bool:
        """Whether a second block of another index did exactly what the first one did."""
        return (
            str(self.spec) == str(other.spec)
            and self.metas == other.metas
            and self.descendants == other.descendants
            and self.flops == other.flops
            and [k for _, k in self.effects] == [k for _, k in other.effects]
        )

    def outputs(self, fresh: bool = False) -> Any:
        # The first call's own output tensors are handed out again: they are fake (no data to
        # get wrong) and making new ones costs a fake dispatch each. Only if a caller changed one
        # in place (unsqueeze_, resize_) is a fresh tensor of the recorded metadata made.
        for i, m in enumerate(self.metas):
            leaf = self.leaves[i]
            # `fresh`: edges follow tensor identity (`_probe.edges`): a replay needs its own.
            if m is not None and (fresh or meta(leaf) != m):
                self.leaves[i] = new_tensor(m, leaf)
        return pytree.tree_unflatten(self.leaves, self.spec)


class Memo(BlockMemo):
    """Made by a fake ProbeRun, which records each of `stubs()` around its stub. It reads the
    run's modules (pre-order, ``paths`` by id) and the recorder's open calls and log."""

    def __init__(
        self,
        model: nn.Module,
        modules: list[nn.Module],
        paths: dict[int, str],
        recorder: Recorder,
        unshared: bool = False,
    ) -> None:
        super().__init__(model, paths, modules, unshared)
        self.modules, self.paths, self.run = modules, paths, recorder

    def stubs(self) -> list[tuple[nn.Module, Callable[..., Any]]]:
        """(module, stub) for each outermost repeated block."""
        stubbed = self.stubbed
        named = ((self.paths[id(m)], m) for m in self.modules if id(m) in stubbed)
        return [(m, stub) for _, m, stub in self.make_stubs(named)]

    def here(self, path: str) -> Call | None:
        """The recorder's open call of `path`: the stub runs inside the probe's recording."""
        own = self.run.stack[-1] if self.run.stack else None
        return own if own is not None and own.path == path else None

    def begin(self, here: Call, call: BlockCall) -> Any:
        produced = self.run.produced  # the block's edges from its inputs, kept as such
        first_edge = len(produced.raw) if produced is not None else 0
        marked = mark(produced, pytree.tree_leaves((call.args, call.kwargs)))
        return len(self.run.log), first_edge, marked

    def end(
        self, here: Call, token: Any, result: Any, call: BlockCall, before: list[Any]
    ) -> _Entry | None:
        start, first_edge, marked = token
        fresh = self._describe(here, result, start, call, before, first_edge)
        unmark_outputs(self.run.produced, pytree.tree_leaves(result), marked)
        unmark(self.run.produced, marked, first_edge)
        return fresh

    def _describe(
        self,
        own: Call,
        result: Any,
        start: int,
        call: BlockCall,
        before: list[Any],
        first_edge: int,
    ) -> _Entry | None:
        """What the block just did (its calls from ``log[start]`` on, its outputs, its caches'
        slots), or None where a replay could not repeat it."""
        run = self.run
        leaves, spec = pytree.tree_flatten(result)
        if not all(isinstance(leaf, (torch.Tensor, *PLAIN)) for leaf in leaves):
            # an arbitrary object may be mutable or stateful: no entry
            bad = next(x for x in leaves if not isinstance(x, (torch.Tensor, *PLAIN)))
            self.unremembered = f"it returns a {type(bad).__qualname__}, which a replay cannot copy"
            return None
        effects = slot_effects(call.caches, before, call.index)
        if effects is None:
            self.unremembered = "it changed the cache it was passed beyond its own slot"
            return None
        cut = len(own.path)
        descendants: list[Any] = []
        # Sites and callers (a position among them, -1: `own`): a replay gives the run's flow.
        where = {id(own): -1}
        for inner_call in run.log[start:]:
            if not inner_call.done or not inner_call.path.startswith(own.path + "."):
                self.unremembered = f"it called {inner_call.path or 'the model'}, outside itself"
                return None
            up = where.get(id(inner_call.parent), -1)
            where[id(inner_call)] = len(descendants)
            ins, outs = inner_call.input_leaves(), inner_call.output_leaves()
            site = inner_call.where()
            descendants.append((inner_call.path[cut:], ins, outs, inner_call.flops, site, up))
        if run.produced is not None:
            inner = inner_edges(run.produced.raw, first_edge, where)
            if inner is None:
                # a tensor reached the block other than through its inputs
                self.unremembered = "a tensor reached it other than through its inputs"
                return None
            descendants = [(*d, inner.get(i, ())) for i, d in enumerate(descendants)]
        entry = _Entry(spec, leaves, descendants, own.flops, call.index, effects)
        if run.produced is not None:
            entry.returns = return_refs(run.produced, leaves, where)
        return entry

    def replay(self, here: Call, entry: _Entry, call: BlockCall) -> Any:
        run = self.run
        own = here
        # The inputs' leaves: a replay's edges come from whatever produced them.
        given = pytree.tree_leaves((call.args, call.kwargs))
        made: list[Call] = []
        produced = run.produced
        pending = []
        base, log = own.path, run.log
        # `Call.made`'s work inline, with the descendant's fields read by position: a replay
        # makes every call of the block, and on many small blocks the calls and unpackings per
        # call were most of the replay.
        for d in entry.descendants:
            up, site = d[5], d[4]
            inner = Call()
            inner.path, inner.inputs, inner.outputs, inner.done = base + d[0], d[1], d[2], True
            inner.flops = d[3] or 0
            inner.code, inner.line = site[0], site[1]
            inner.contract = site[2] if len(site) > 2 else ()
            inner.parent = own if up < 0 else made[up]
            made.append(inner)
            log.append(inner)
            if produced is not None and len(d) > 6 and d[6]:
                pending.append((inner, d[6]))
        # After every call is made: a call's return edges come from its own later descendants.
        inputs = list(given)
        for inner, edges in pending:
            replay_edges(produced, inner, edges, made, inputs)  # type: ignore[arg-type]
        for outer in run.stack:  # own is on the stack: it and its callers get the block's FLOPs
            outer.flops += entry.flops
        replay_slots(call.caches, entry.effects, call.index)
        out = entry.outputs(fresh=produced is not None)
        if produced is not None and entry.returns:
            replay_returns(produced, entry.leaves, entry.returns, made, list(given))
        return out
