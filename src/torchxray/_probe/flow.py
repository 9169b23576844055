"""The flow of a probe: every module call in the order it began, nested as it ran.

Each call the recorder made (`_probe.calls`) knows the call that was open when it began, its
`parent`: the real call stack, so re-entries, loops and calls out of declaration order show as
they happened. `Flow` turns the log into `FlowEntry`s when first read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload


@dataclass(frozen=True, slots=True)
class FlowEntry:
    """One module call: `path`, its `index` among that path's calls (0 for the first), its `depth`
    in the call stack (0 for the root) and `parent`, the position in the flow of the call that
    called it (-1 for the outermost).

    `ProbeReport.flow` lists them in the order the calls began.

    Attributes:
        path: The module's dotted path (``""`` is the model).
        index: Which call of that path this is (0 for the first).
        depth: Its depth in the call stack (0 for the root).
        parent: The position in the flow of the call that made it (-1 for the outermost).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.ReLU()))
        >>> for entry in tx.probe(model, torch.randn(1, 4)).flow:
        ...     print(entry)
        (root) #0
          0 #0
          1 #0
            1.0 #0
    """

    path: str
    index: int
    depth: int
    parent: int

    def __str__(self) -> str:
        return f"{'  ' * self.depth}{self.path or '(root)'} #{self.index}"


class Flow(Sequence[FlowEntry]):
    """The ordered, nested list of calls; holds the calls' paths and parents, never a tensor."""

    def __init__(self, calls: Sequence[Any]) -> None:
        self._calls: Sequence[Any] = calls
        self._made: tuple[FlowEntry, ...] | None = None

    def _entries(self) -> tuple[FlowEntry, ...]:
        if self._made is None:
            pos: dict[int, int] = {}
            counts: dict[str, int] = {}
            out: list[FlowEntry] = []
            for call in self._calls:
                parent = call.parent
                # A call dropped from the log (cut short by an exception a forward caught) is
                # skipped: its children hang from its nearest recorded caller.
                while parent is not None and id(parent) not in pos:
                    parent = parent.parent
                up = -1 if parent is None else pos[id(parent)]
                n = counts.get(call.path, 0)
                counts[call.path] = n + 1
                pos[id(call)] = len(out)
                out.append(FlowEntry(call.path, n, 0 if up < 0 else out[up].depth + 1, up))
            self._made, self._calls = tuple(out), ()
        return self._made

    @overload
    def __getitem__(self, i: int) -> FlowEntry: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[FlowEntry, ...]: ...
    def __getitem__(self, i: int | slice) -> FlowEntry | tuple[FlowEntry, ...]:
        return self._entries()[i]

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self) -> Iterator[FlowEntry]:
        return iter(self._entries())

    def __eq__(self, other: object) -> bool:
        # Reports compare by value (a memoised probe against a full one, a rerun).
        if isinstance(other, Flow):
            return self._entries() == other._entries()
        if isinstance(other, (tuple, list)):
            return list(self._entries()) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def callers(self, path: str) -> list[str]:
        """The paths whose calls called `path`, in order of first call. Before the entries are
        made, read from the calls themselves: a selection after a probe asks this of one path,
        and making 100,000 entries for it took longer than the probe's own bookkeeping."""
        if self._made is not None:
            return callers_of(self._made, path)
        out: dict[str, None] = {}
        logged = {id(c) for c in self._calls}
        for call in self._calls:
            if call.path != path:
                continue
            parent = call.parent
            while parent is not None and id(parent) not in logged:  # dropped: as in _entries
                parent = parent.parent
            if parent is not None:
                out[parent.path] = None
        return list(out)

    def children(self, i: int) -> tuple[int, ...]:
        """Positions of the calls the call at position `i` made, in order."""
        return tuple(k for k, e in enumerate(self._entries()) if e.parent == i)

    def text(self, limit: int = 200) -> str:
        """The flow as an indented call tree, `limit` lines at most."""
        entries = self._entries()
        lines = [str(e) for e in entries[:limit]]
        if len(entries) > limit:
            lines.append(f"... {len(entries) - limit} more calls")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<flow of {len(self)} calls>"


def callers_of(flow: Sequence[FlowEntry], path: str) -> list[str]:
    """`Flow.callers` of any sequence of entries (a report made without a `Flow` holds a tuple)."""
    if isinstance(flow, Flow):
        return flow.callers(path)
    out: dict[str, None] = {}
    for e in flow:
        if e.path == path and e.parent >= 0:
            out[flow[e.parent].path] = None
    return list(out)
