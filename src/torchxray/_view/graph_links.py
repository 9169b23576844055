"""The Graph tab's edges: the probe's dataflow mapped onto the nodes a graph draws.

``report.edges`` say which call received which call's output; ``report.returns`` what a module
with children returned came from. A path maps to the node that holds it (``Where``): a box (a
module drawn whole, or a folded run of them), "input" outside the module drawn, "" for that module
itself, None for a module drawn as a cluster (its children are drawn). An edge out of a cluster
starts where the cluster's returned value came from (its returns, followed down); the module's
own returns end at "output", and one from outside it is a skip: "input" -> "output" (a residual
sum that no child receives). Children no module fed, and children whose output nothing received,
get dashed "inferred" edges when the probe saw no edge to the input or output at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..probe import ProbeReport

__all__ = ["Link", "Where", "links"]

_FOLLOW = 8  # clusters followed down from one edge's source (nested returns)
_Source = tuple[str, str, int, tuple[str, ...]]  # (node id, module path, call index, ops)


@dataclass
class Link:
    """The edges between two nodes: those into the destination module itself when there are
    any (not the same tensor again into its descendants), else all."""

    shapes: list[tuple[int, ...]] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    sources: set[tuple[str, int]] = field(default_factory=set)
    direct: bool = False
    inferred: bool = False

    def add(
        self, src: tuple[str, int], shape: tuple[int, ...], ops: Sequence[str], direct: bool
    ) -> None:
        if self.direct and not direct:
            return
        if direct and not self.direct:
            self.shapes, self.ops, self.sources, self.direct = [], [], set(), True
        self.shapes.append(shape)
        self.ops.extend(o for o in ops if o not in self.ops)
        self.sources.add(src)


class Where:
    """Which node holds a path: `owner` maps each drawn box's module path (each module of a
    folded run) to its node id; paths under a box belong to it."""

    def __init__(self, base: str, owner: dict[str, str]) -> None:
        self.base, self.owner = base, owner
        self.prefix = f"{base}." if base else ""

    def __call__(self, path: str) -> str | None:
        if path == self.base:
            return ""
        if not path.startswith(self.prefix):
            return "input"
        at = len(self.prefix)
        while True:
            dot = path.find(".", at)
            got = self.owner.get(path if dot < 0 else path[:dot])
            if got is not None:
                return got
            if dot < 0:
                return None  # a cluster's own path
            at = dot + 1


def links(
    report: ProbeReport | None, base: str, owner: dict[str, str]
) -> tuple[dict[tuple[str, str], Link], str]:
    """The edges between the node ids, "input" and "output"; a note when there are none."""
    if report is None:
        return {}, "no probe has run: run one from the Probe tab"
    if report.mode != "fake":
        return {}, "a real probe records no dataflow: run a fake probe from the Probe tab"
    where = Where(base, owner)
    returned: dict[tuple[str, int], list[tuple[str, int, tuple[str, ...]]]] = {}
    for r in report.returns:
        returned.setdefault((r.dst, r.dst_index), []).append((r.src, r.src_index, r.ops))

    def sources(path: str, index: int, ops: tuple[str, ...], hops: int = 0) -> list[_Source]:
        """The nodes a call's output came from: its own node, or down a cluster's returns."""
        got = where(path)
        if got is not None:
            return [(got, path, index, ops)]
        if hops >= _FOLLOW:
            return []
        out = []
        for src, i, more in returned.get((path, index), ()):
            out += sources(src, i, (*more, *(o for o in ops if o not in more)), hops + 1)
        return out

    out: dict[tuple[str, str], Link] = {}
    fed: set[str] = set()
    used: set[tuple[str, int]] = set()  # calls whose output a module here received
    for e in report.edges:
        fed.add(e.dst)
        used.add((e.src, e.src_index))
        b = where(e.dst)
        if not b:  # into the module itself, or into a cluster: its children receive it too
            continue
        for a, src, index, ops in sources(e.src, e.src_index, e.ops):
            if not a or a == b or (a == "input" and b == "input"):
                continue
            to = "output" if b == "input" else b  # from a descendant to outside
            direct = to == "output" or owner.get(e.dst) == b
            out.setdefault((a, to), Link()).add((src, index), e.shape, ops, direct)
    for r in report.returns:  # what the module drawn returned: into "output"
        used.add((r.src, r.src_index))  # a returned output went somewhere
        if r.dst != base:
            continue
        for a, src, index, ops in sources(r.src, r.src_index, r.ops):
            if a:
                out.setdefault((a, "output"), Link()).add((src, index), r.shape, ops, True)
    has = {end for pair in out for end in pair}
    if "input" not in has or "output" not in has:
        _infer(report, owner, out, has, fed, used)
    note = "" if out else "no dataflow between these modules in the last probe"
    return out, note


def _infer(
    report: ProbeReport,
    owner: dict[str, str],
    out: dict[tuple[str, str], Link],
    has: set[str],
    fed: set[str],
    used: set[tuple[str, int]],
) -> None:
    """Dashed edges where a tensor came from no module (the model's input) or went to none."""
    calls: dict[str, int] = {}  # the boxes' calls (records are made only where needed)
    for f in report.flow:
        if f.path in owner:
            calls[f.path] = calls.get(f.path, 0) + 1
    for path, nid in owner.items():
        if path not in calls:  # not called (a ModuleList's blocks are called one by one)
            continue
        if "input" not in has and path not in fed:
            link = out.setdefault(("input", nid), Link(inferred=True))
            for shape in report.records[path].input_shapes[:1]:
                link.add(("", 0), tuple(shape), (), True)
        if "output" not in has and any((path, i) not in used for i in range(calls[path])):
            link = out.setdefault((nid, "output"), Link(inferred=True))
            for shape in report.records[path].output_shapes[:1]:
                link.add(("", 0), tuple(shape), (), True)
