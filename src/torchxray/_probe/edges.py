"""Dataflow edges of a fake probe: module A's output consumed by module B gives A -> B.

Followed by tensor identity, for the run only. `Produced` maps id(tensor) to the tensor (held so
that its id is not reused; fake tensors hold no memory) and the calls whose outputs it came from:
the recorder (`_probe.calls`) enters each module's outputs and looks up each module's inputs; the
FLOP counter's dispatch mode (`_probe.flops`), which sees every op of a fake run, carries the
producers through functional ops (``x + identity``, views, ``torch.cat``) and names the ops, so
an edge spans the ops between two modules and a residual block's skip shows as an edge of its
own. A tensor that reaches a module by any other way (a module attribute, a cache) gives no edge.
Real mode keeps no edges: holding its tensors would hold their memory.

Returns: when a module with children returns, what each returned tensor came from is recorded
too, as an edge into the module marked as returned (`Edges(..., returned=True)`,
``report.returns``): a child whose output it returned ("blocks.1.1.drop_path" -> "blocks.1.1"),
or, through functional ops only, the module's own input (``x = self.drop_path(x) + shortcut``:
the producer of ``shortcut`` -> "blocks.1.1" via add): a residual skip that no module of the
block receives. Leaf modules record none: their input reaches their output through their own
ops, which says nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

_MAX_OPS = 6  # ops named on one edge; a longer chain ends with "..."
# The last "op" of a raw edge into the module that returned the tensor (see the docstring): kept
# in the ops so that the memo's inner edges and replays carry returns as they carry the rest.
RETURNED = "<returned>"


@dataclass(frozen=True, slots=True)
class Edge:
    """A tensor `src` (call `src_index` of that path) returned and `dst` (call `dst_index`)
    received, with its shape, and the functional ops in between (``("add_", "relu")``).

    A fake probe's `ProbeReport.edges` lists them (a real probe gives none).

    Attributes:
        src: The path of the module that returned the tensor.
        src_index: Which call of `src` (0 for the first).
        dst: The path of the module that received it.
        dst_index: Which call of `dst`.
        shape: The tensor's shape.
        ops: The functional ops applied between the two, in order.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.b(torch.relu(self.a(x)))
        >>> [str(e) for e in tx.probe(Net(), torch.randn(1, 4)).edges]
        ['a#0 -> b#0 [1x4] via relu']
    """

    src: str
    src_index: int
    dst: str
    dst_index: int
    shape: tuple[int, ...]
    ops: tuple[str, ...] = ()

    def __str__(self) -> str:
        via = f" via {', '.join(self.ops)}" if self.ops else ""
        shape = "x".join(map(str, self.shape))
        return (
            f"{self.src or '(root)'}#{self.src_index} -> {self.dst or '(root)'}#{self.dst_index}"
            f" [{shape}]{via}"
        )


class Produced:
    """The producers of the run's tensors, and the raw edges found so far (`raw`: producer call,
    consumer call, shape, ops), in the order the consumers received them. Each tensor maps to its
    sources, each with the ops on the way from it (distinct names, in order)."""

    def __init__(self) -> None:
        self.map: dict[int, tuple[torch.Tensor, tuple[tuple[Any, tuple[str, ...]], ...]]] = {}
        self.raw: list[tuple[Any, Any, tuple[int, ...], tuple[str, ...]]] = []

    def produce(self, call: Any, leaves: Sequence[Any], returns: bool = False) -> None:
        """`call` returned `leaves`; with `returns` (a module with children), what each came
        from is recorded first as a return edge."""
        entry = ((call, ()),)
        get = self.map.get
        seen: set[int] | None = set() if returns else None
        for t in leaves:
            if isinstance(t, torch.Tensor):
                if seen is not None and (hit := get(id(t))) is not None and hit[0] is t:
                    for src, ops in hit[1]:
                        if id(src) not in seen and src is not call:
                            seen.add(id(src))
                            self.raw.append((src, call, tuple(t.shape), (*ops, RETURNED)))
                self.map[id(t)] = (t, entry)

    def consume(self, call: Any, leaves: Sequence[Any]) -> None:
        seen: set[int] = set()
        get = self.map.get
        for t in leaves:
            if not isinstance(t, torch.Tensor):
                continue
            hit = get(id(t))
            if hit is None or hit[0] is not t:
                continue
            for src, ops in hit[1]:
                if id(src) not in seen and src is not call:
                    seen.add(id(src))
                    self.raw.append((src, call, tuple(t.shape), ops))

    def follow(self, func: Any, args: Sequence[Any], out: Any) -> None:
        """An op's outputs come from the sources of its tensor arguments (one level of lists,
        as ``torch.cat`` takes them), the op added to the ops from each."""
        get = self.map.get
        found: dict[Any, tuple[str, ...]] | None = None
        for a in args:
            items = a if type(a) in (list, tuple) else (a,)
            for t in items:
                if isinstance(t, torch.Tensor):
                    hit = get(id(t))
                    if hit is not None and hit[0] is t:
                        if found is None:
                            found = {}
                        for src, ops in hit[1]:
                            was = found.get(src)
                            found[src] = ops if was is None else _merge(was, ops)
        if found is None:
            return
        name = func.__name__.split(".")[0]
        entry = tuple((src, ops if name in ops else (*ops, name)) for src, ops in found.items())
        items = out if type(out) in (list, tuple) else (out,)
        for t in items:
            if isinstance(t, torch.Tensor):
                self.map[id(t)] = (t, entry)

    def release(self) -> None:
        self.map.clear()


def _merge(before: tuple[str, ...], ops: tuple[str, ...]) -> tuple[str, ...]:
    return before + tuple(o for o in ops if o not in before)


def _named(ops: tuple[str, ...]) -> tuple[str, ...]:
    return ops if len(ops) <= _MAX_OPS else (*ops[: _MAX_OPS - 1], "...")


class Edges(Sequence[Edge]):
    """The run's edges in the order of their consumers' calls, made when first read; with
    `returned`, the return edges instead (the module that returned the tensor as `dst`)."""

    def __init__(self, log: Sequence[Any], raw: list[Any], returned: bool = False) -> None:
        self._log: Sequence[Any] = log
        self._raw = raw
        self._returned = returned
        self._made: tuple[Edge, ...] | None = None

    def _edges(self) -> tuple[Edge, ...]:
        if self._made is None:
            pos: dict[int, tuple[int, int]] = {}  # id(call) -> (position in the log, call index)
            counts: dict[str, int] = {}
            for i, call in enumerate(self._log):
                n = counts.get(call.path, 0)
                counts[call.path] = n + 1
                pos[id(call)] = (i, n)
            made = []
            want = self._returned
            for src, dst, shape, ops in self._raw:
                if (bool(ops) and ops[-1] == RETURNED) is not want:
                    continue
                if want:
                    ops = ops[:-1]
                s, d = pos.get(id(src)), pos.get(id(dst))
                if s is not None and d is not None:  # both calls finished and were kept
                    made.append((d[0], Edge(src.path, s[1], dst.path, d[1], shape, _named(ops))))
            made.sort(key=lambda pair: pair[0])  # stable: a consumer's inputs keep their order
            self._made, self._log, self._raw = tuple(e for _, e in made), (), []
        return self._made

    def __getitem__(self, i: Any) -> Any:
        return self._edges()[i]

    def __len__(self) -> int:
        return len(self._edges())

    def __iter__(self) -> Iterator[Edge]:
        return iter(self._edges())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Edges):
            return self._edges() == other._edges()
        if isinstance(other, (tuple, list)):
            return list(self._edges()) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} dataflow edges>"


# What the fake probe's memo (`_probe.memo`) keeps of a block's edges, so that a replayed block
# gives the edges a run would. While the block runs for the memo, each of its input tensors is
# marked as coming from `Marker(k)`, k its position among the inputs' leaves: an inner edge's
# source is then an inner call ("d", its position among the block's calls) or input leaf k
# ("i", k), whatever produced that leaf in this run or a replay (or nothing, for a model input).
_Inner = tuple[tuple[str, int, tuple[int, ...], tuple[str, ...]], ...]
_Saved = list[tuple[Any, Any]]


class Marker:
    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k


def mark(produced: Produced | None, leaves: list[Any]) -> _Saved:
    """Mark the block's input leaves; returns what they were, for `unmark`."""
    saved: _Saved = []
    if produced is None:  # a real probe keeps no edges
        return saved
    for k, t in enumerate(leaves):
        hit = produced.map.get(id(t)) if isinstance(t, torch.Tensor) else None
        saved.append((t, hit if hit is not None and hit[0] is t else None))
        if isinstance(t, torch.Tensor):
            produced.map[id(t)] = (t, ((Marker(k), ()),))
    return saved


def _recent(raw: list[Any], src: Any, dst: Any, ops: tuple[str, ...]) -> bool:
    """An edge from `src` to `dst` of the same side (received, or returned: a module's input can
    be both, ``x * self.gate(x)``) among the last few: the duplicate a marked leaf gives."""
    back = ops[-1:] == (RETURNED,)
    return any(r[0] is src and r[1] is dst and (r[3][-1:] == (RETURNED,)) is back for r in raw[-8:])


def _expand(raw: list[Any], call: Any, k: int, shape: Any, ops: Any, saved: _Saved) -> None:
    hit = saved[k][1] if k < len(saved) else None
    if hit is None:
        return
    for src, before in hit[1]:
        if not _recent(raw, src, call, ops):
            raw.append((src, call, shape, _merge(before, ops)))


def unmark(produced: Produced | None, saved: _Saved, first: int) -> None:
    """Put back the input leaves' producers, and turn the edges found since `first` from a
    marked leaf into edges from that leaf's producers."""
    if produced is None:
        return
    for t, hit in saved:
        if isinstance(t, torch.Tensor):
            now = produced.map.get(id(t))
            if now is not None and now[1] and isinstance(now[1][0][0], Marker):
                if hit is None:
                    del produced.map[id(t)]
                else:
                    produced.map[id(t)] = hit
    raw = produced.raw
    found = raw[first:]
    del raw[first:]
    for src, dst, shape, ops in found:
        if isinstance(src, Marker):
            _expand(raw, dst, src.k, shape, ops, saved)
        elif not _recent(raw, src, dst, ops):
            raw.append((src, dst, shape, ops))


def inner_edges(raw: list[Any], first: int, where: dict[int, int]) -> dict[int, _Inner] | None:
    """The edges found since `first` (all inside the block, whose calls are at `where`'s
    positions), by consumer position; None if a source is neither inside nor an input."""
    out: dict[int, list[Any]] = {}
    for src, dst, shape, ops in raw[first:]:
        d = where.get(id(dst), -1)
        if d < 0:
            return None
        s = where.get(id(src), -1)
        if s >= 0:
            ref: tuple[str, int] = ("d", s)
        elif isinstance(src, Marker):
            ref = ("i", src.k)
        else:
            return None
        out.setdefault(d, []).append((*ref, shape, ops))
    return {d: tuple(e) for d, e in out.items()}


def replay_edges(
    produced: Produced, call: Any, inner: _Inner, made: list[Any], inputs: list[Any]
) -> None:
    """A replayed call's edges: from the block's calls, or from whatever produced input `k`."""
    raw = produced.raw
    for kind, j, shape, ops in inner:
        if kind == "d":
            raw.append((made[j], call, shape, ops))
            continue
        t = inputs[j] if j < len(inputs) else None
        hit = produced.map.get(id(t)) if isinstance(t, torch.Tensor) else None
        if hit is not None and hit[0] is t:
            _expand(raw, call, 0, shape, ops, [(t, hit)])


# What a memoised block returned came from, kept so that a replay gives the return edges a run
# would: per output leaf, its sources as ("d", position among the block's calls, ops) or
# ("i", input leaf k, ops).
_Returns = tuple[tuple[tuple[str, int, tuple[str, ...]], ...], ...]


def return_refs(produced: Produced, leaves: Sequence[Any], where: dict[int, int]) -> _Returns:
    """The sources of the block's output `leaves` (read before its own return is recorded)."""
    out = []
    for t in leaves:
        hit = produced.map.get(id(t)) if isinstance(t, torch.Tensor) else None
        refs: list[tuple[str, int, tuple[str, ...]]] = []
        if hit is not None and hit[0] is t:
            for src, ops in hit[1]:
                if isinstance(src, Marker):
                    refs.append(("i", src.k, ops))
                elif where.get(id(src), -1) >= 0:
                    refs.append(("d", where[id(src)], ops))
        out.append(tuple(refs))
    return tuple(out)


def unmark_outputs(produced: Produced | None, leaves: Sequence[Any], saved: _Saved) -> None:
    """The block's outputs made from a marked input leaf through ops come from that leaf's own
    producers (what a run without the memo records), before `unmark` forgets the markers."""
    if produced is None:
        return
    for t in leaves:
        hit = produced.map.get(id(t)) if isinstance(t, torch.Tensor) else None
        if hit is None or hit[0] is not t or not any(isinstance(s, Marker) for s, _ in hit[1]):
            continue
        sources: list[tuple[Any, tuple[str, ...]]] = []
        for src, ops in hit[1]:
            if not isinstance(src, Marker):
                sources.append((src, ops))
            elif src.k < len(saved) and (was := saved[src.k][1]) is not None:
                sources += [(s, _merge(before, ops)) for s, before in was[1]]
        produced.map[id(t)] = (t, tuple(sources))


def replay_returns(
    produced: Produced, leaves: Sequence[Any], refs: _Returns, made: list[Any], given: list[Any]
) -> None:
    """A replay's fresh outputs come from what the block's outputs came from: its replayed calls
    or its inputs' producers, so that the block's own return is recorded as a run records it."""
    for t, got in zip(leaves, refs):
        if not isinstance(t, torch.Tensor) or not got:
            continue
        sources: list[tuple[Any, tuple[str, ...]]] = []
        for kind, j, ops in got:
            if kind == "d":
                sources.append((made[j], ops))
                continue
            x = given[j] if j < len(given) else None
            hit = produced.map.get(id(x)) if isinstance(x, torch.Tensor) else None
            if hit is not None and hit[0] is x:
                sources += [(s, _merge(before, ops)) for s, before in hit[1]]
        if sources:
            produced.map[id(t)] = (t, tuple(sources))
