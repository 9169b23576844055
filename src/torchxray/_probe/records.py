"""Plain records a shape probe returns: per-tensor info, per-call and per-module records, the report.

Nothing here touches a model; `probe.py` fills these in. All records are frozen so a report can be
kept, compared (`ProbeReport.diff`) and serialised without holding a single tensor alive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._text import closest
from .._trace.writes import Write
from .edges import Edge
from .flow import FlowEntry
from .sites import Site


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """What a probe remembers of one tensor: never the data, only its metadata."""

    shape: tuple[int, ...]
    dtype: str  # "float32", as in ``str(torch.float32)`` without the "torch." prefix
    device: str  # "cpu", "cuda:0", "meta"
    name: str = ""  # where the tensor sat in the call: "args[0]", "kwargs['mask']", "['logits']"

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One call of one module. Times are milliseconds, memory is bytes (CUDA real mode only)."""

    inputs: tuple[TensorInfo | str, ...]
    outputs: tuple[TensorInfo | str, ...]
    flops: int | None = None
    time_ms: float | None = None
    # Bytes the call left allocated when it returned (outputs included), and the highest allocation
    # seen while it ran, both relative to what was allocated when it started.
    mem_alloc: int | None = None
    mem_peak: int | None = None
    complete: bool = True  # False for calls cut short by the exception a failed probe reports


def _shapes(leaves: tuple[TensorInfo | str, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple(leaf.shape for leaf in leaves if isinstance(leaf, TensorInfo))


@dataclass(frozen=True, slots=True)
class ModuleRecord:
    """Everything a probe saw of one module path. Shapes and leaves are those of the first call."""

    path: str
    cls: str
    calls: int
    inputs: tuple[TensorInfo | str, ...]
    outputs: tuple[TensorInfo | str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    flops: int | None
    time_ms: float | None
    mem_alloc: int | None
    mem_peak: int | None
    call_records: tuple[CallRecord, ...] = ()
    complete: bool = True
    # Every distinct place it was called from, with its count, in order of first use.
    sites: tuple[Site, ...] = ()
    # Where its forward's annotations disagree with what it received or returned, every call.
    contract: tuple[str, ...] = ()

    @classmethod
    def from_calls(
        cls,
        path: str,
        cls_name: str,
        calls: tuple[CallRecord, ...],
        sites: tuple[Site, ...] = (),
        contract: tuple[str, ...] = (),
    ) -> ModuleRecord:
        first = calls[0]
        if len(calls) == 1:  # the usual case, without building four lists (10,000 times a probe)
            return cls(
                path=path,
                cls=cls_name,
                calls=1,
                inputs=first.inputs,
                outputs=first.outputs,
                input_shapes=_shapes(first.inputs),
                output_shapes=_shapes(first.outputs),
                flops=first.flops,
                time_ms=first.time_ms,
                mem_alloc=first.mem_alloc,
                mem_peak=first.mem_peak,
                call_records=calls,
                complete=first.complete,
                sites=sites,
                contract=contract,
            )
        flops = [c.flops for c in calls if c.flops is not None]
        times = [c.time_ms for c in calls if c.time_ms is not None]
        allocs = [c.mem_alloc for c in calls if c.mem_alloc is not None]
        peaks = [c.mem_peak for c in calls if c.mem_peak is not None]
        return cls(
            path=path,
            cls=cls_name,
            calls=len(calls),
            inputs=first.inputs,
            outputs=first.outputs,
            input_shapes=_shapes(first.inputs),
            output_shapes=_shapes(first.outputs),
            flops=sum(flops) if flops else None,
            time_ms=sum(times) if times else None,
            mem_alloc=sum(allocs) if allocs else None,
            mem_peak=max(peaks) if peaks else None,
            call_records=calls,
            complete=all(c.complete for c in calls),
            sites=sites,
            contract=contract,
        )


class LazyRecords(Mapping[str, ModuleRecord]):
    """path -> ModuleRecord in call order, each record made from the raw calls when first read.

    Making the frozen records costs about a quarter of a bare forward of 10,000 small modules,
    and a report is often read for a few paths only (a widget shows one page of
    rows), so they are made on demand. It holds the calls' metadata only, never a tensor or a module.
    """

    def __init__(
        self,
        calls: Sequence[Any],
        build: Callable[[str, list[Any]], ModuleRecord],
        names: Mapping[str, str] | None = None,
    ) -> None:
        self._calls: Sequence[Any] = calls
        self._build = build
        self._names = names  # path -> the class name its record gets, when known without one
        self._grouped: dict[str, list[Any]] | None = None
        self._made: dict[str, ModuleRecord] = {}

    def _groups(self) -> dict[str, list[Any]]:
        if self._grouped is None:
            grouped: dict[str, list[Any]] = {}
            for call in self._calls:
                grouped.setdefault(call.path, []).append(call)
            self._grouped, self._calls = grouped, ()
        return self._grouped

    def __getitem__(self, path: str) -> ModuleRecord:
        made = self._made.get(path)
        if made is None:
            made = self._made[path] = self._build(path, self._groups()[path])
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._groups())

    def __len__(self) -> int:
        return len(self._groups())

    def __contains__(self, path: object) -> bool:
        return path in self._groups()

    def output_signature(self, path: str) -> tuple[tuple[tuple[int, ...], str], ...]:
        """`_signature` of the record at `path`, read from its first call without making the
        record: a diff of two 100,000-module reports made every record of both."""
        made = self._made.get(path)
        if made is not None:
            return _signature(made)
        first = self._groups()[path][0]
        return tuple((o.shape, o.dtype) for o in first.output_leaves() if isinstance(o, TensorInfo))

    def compare(self, other: LazyRecords) -> tuple[list[str], list[str], list[str]]:
        """(changed, added, removed) from `self` (before) to `other` (after): the paths in both
        whose `output_signature` differs, read from the first calls' raw metadata (a diff of two
        100,000-module reports through `output_signature` took a quarter of a second), then
        those in `other` only and those in `self` only, each in its report's order."""
        mine, theirs = self._groups(), other._groups()
        changed: list[str] = []
        for path, calls in theirs.items():
            old = mine.get(path)
            if old is None:
                continue
            a, b = old[0], calls[0]
            am, bm = a.out_meta, b.out_meta
            if am is not None and bm is not None:  # (shape, dtype, device), as TensorInfo has them
                if am[1] is not bm[1] or am[0] != bm[0]:
                    changed.append(path)
            elif am is None and bm is None and a.outputs is not None and a.outputs == b.outputs:
                continue  # the same leaves (TensorInfo is interned: mostly by identity)
            elif self.output_signature(path) != other.output_signature(path):
                changed.append(path)
        added = [p for p in theirs if p not in mine]
        removed = [p for p in mine if p not in theirs]
        return changed, added, removed

    def cls_of(self, path: str) -> str:
        """The class name of the record at `path`, without making the record when known."""
        made = self._made.get(path)
        if made is None and self._names is not None and path in self:
            return self._names.get(path, "?")
        return (made or self[path]).cls

    def __repr__(self) -> str:
        return f"<{len(self)} module records>"


@dataclass(frozen=True, slots=True)
class ProbeError:
    """Where and why a probe failed: the innermost module whose forward raised.

    Attributes:
        path: The module's dotted path; ``""`` is the model itself (also when the inputs could not
            even be prepared).
        cls: Its class name.
        exc_type: The exception's type, e.g. ``"RuntimeError"``, ``"torch.OutOfMemoryError"``.
        message: The exception's message.
        input_shapes: The shapes the module received.
        hint: What to try, in a sentence (the patch the failure follows, the inputs to check).
        remedy: ``"real"`` where fake tensors cannot run an op the real probe can; else ``""``.
        headline: The failure in a status line's words, where torch's are not; else ``""``.
    """

    path: str  # "" is the root model (also used when the inputs could not even be prepared)
    cls: str
    exc_type: str  # "RuntimeError", "torch.OutOfMemoryError", ...
    message: str
    input_shapes: tuple[tuple[int, ...], ...]
    hint: str = ""
    remedy: str = ""  # "real": fake tensors cannot run an op here, the real probe can; or ""
    headline: str = ""  # the failure in a status line's words, where torch's are not; or ""

    def __str__(self) -> str:
        where = repr(self.path) if self.path else "the model (root)"
        text = f"{self.exc_type} in {where} ({self.cls}) with inputs {list(self.input_shapes)}: "
        text += self.message
        return f"{text}\nhint: {self.hint}" if self.hint else text


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One module whose outputs differ between two reports; `before`/`after` are output leaves."""

    path: str
    before: tuple[TensorInfo | str, ...]
    after: tuple[TensorInfo | str, ...]
    cls_before: str | None
    cls_after: str | None


@dataclass(frozen=True, slots=True)
class ProbeDiff:
    changed: tuple[DiffEntry, ...]
    added: tuple[DiffEntry, ...]
    removed: tuple[DiffEntry, ...]

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)


def _signature(record: ModuleRecord) -> tuple[tuple[tuple[int, ...], str], ...]:
    return tuple((o.shape, o.dtype) for o in record.outputs if isinstance(o, TensorInfo))


def class_at(records: Mapping[str, ModuleRecord], path: str) -> str:
    """The class name of the record at `path` (KeyError when none), made only when needed."""
    if isinstance(records, LazyRecords):
        return records.cls_of(path)
    return records[path].cls


def classes_changed(
    before: Mapping[str, ModuleRecord], after: Mapping[str, ModuleRecord], paths: Iterable[str]
) -> set[str]:
    """Of `paths` (recorded in both), those whose record's class differs from before to after."""
    if isinstance(before, LazyRecords) and isinstance(after, LazyRecords):
        a, b = before._names, after._names  # the run's class names: no record made
        if a is not None and b is not None:
            return {p for p in paths if a.get(p, "?") != b.get(p, "?")}
    return {p for p in paths if class_at(before, p) != class_at(after, p)}


def _output_signature(
    records: Mapping[str, ModuleRecord], path: str
) -> tuple[tuple[tuple[int, ...], str], ...]:
    if isinstance(records, LazyRecords):
        return records.output_signature(path)
    return _signature(records[path])


@dataclass(frozen=True)
class ProbeReport:
    """The result of `torchxray.probe`: one `ModuleRecord` per module path that ran, in call order.

    ``rep[path]`` gives a record (KeyError naming the closest paths otherwise), ``path in rep``
    tests for one, iteration yields paths. A path through an alias (``model.b = model.a``) gives
    the record of the module's first path, as ``model.get_submodule`` gives the same module;
    `aliases` maps each alias path the probe met to that first path. ``ok`` is False when the
    forward raised; ``error`` then names the innermost module that raised and the records hold
    everything up to that point.

    Each record (`ModuleRecord`) has ``path``, ``cls``, ``calls``, ``inputs`` and ``outputs``
    (`TensorInfo` leaves: shape, dtype, device, name), ``input_shapes`` and ``output_shapes`` (of
    the first call), ``flops``, ``time_ms``, ``mem_alloc`` and ``mem_peak`` (real mode on CUDA),
    ``sites`` (where it was called from) and ``contract`` (where its annotations disagreed).

    Attributes:
        ok: False when the forward raised.
        mode: ``"fake"`` or ``"real"``.
        device: The device the model ran on.
        records: Path -> `ModuleRecord`, in call order (made when first read).
        error: Where and why the forward failed (`ProbeError`), or None.
        total_flops: FLOPs of the whole forward, when counted.
        wall_ms: The probe's own wall time.
        memoised: Paths whose records were copied from an identical earlier block (fake mode).
        aliases: Each alias path the probe met -> the first path of its module.
        nonfinite: Real mode: the first module that returned NaN/Inf from finite inputs, or None.
        not_called: After a successful run, the outermost modules that ran no call although their
            parent did, path -> why (a fused fast path, unused...).
        flow: Every module call in the order it began, nested as it ran (`FlowEntry`).
        edges: Fake mode: module A's output received by module B (`Edge`), with the ops between.
        returns: Fake mode: where what each module with children returned came from (`Edge`).
        limitations: What torchxray itself could not read in this run, one sentence each.
        notes: Where the run departed from the plain mode, one sentence each.
        writes: What the forward wrote to the model and torch's global state, put back (`Write`).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> rep = tx.probe(model, torch.randn(3, 4))
        >>> list(rep), rep.total_flops
        (['', '0', '1', '2'], 288)
        >>> rep["0"].outputs[0].shape, rep["0"].outputs[0].dtype, rep["0"].calls
        ((3, 8), 'float32', 1)
        >>> print(rep.summary())
        (root)  Sequential  x1  -> 3x2  288 FLOPs
        0  Linear  x1  -> 3x8  192 FLOPs
        1  ReLU  x1  -> 3x8  0 FLOPs
        2  Linear  x1  -> 3x2  96 FLOPs
    """

    ok: bool
    mode: str
    device: str
    records: Mapping[str, ModuleRecord]  # a plain dict or LazyRecords
    error: ProbeError | None = None
    total_flops: int | None = None
    wall_ms: float = 0.0
    # Paths whose records were copied from an identical earlier block (fake mode, `_probe.memo`).
    memoised: tuple[str, ...] = field(default=())
    aliases: Mapping[str, str] = field(default_factory=dict)
    # Real mode: the first module to return NaN/Inf from finite inputs (`_probe.finite`), or None.
    nonfinite: ModuleRecord | None = None
    # After a successful run: the outermost modules that ran no call although their parent did,
    # path -> why (a fused fast path, unused, ...); empty after a failed run (`_probe.skipped`).
    not_called: Mapping[str, str] = field(default_factory=dict)
    # Every module call in the order it began, nested as it ran (`_probe.flow`).
    flow: Sequence[FlowEntry] = field(default=())
    # Fake mode: module A's output received by module B, A -> B with the shape (`_probe.edges`).
    edges: Sequence[Edge] = field(default=())
    # Fake mode: what each module with children returned came from, src -> the module (dst)
    # with the ops between: a child's output, or its own input through ops (a residual skip).
    returns: Sequence[Edge] = field(default=())
    # What torchxray itself could not do in this run, one sentence each (a value it could not
    # read: that record holds a placeholder); the forward and every other record are unaffected.
    limitations: tuple[str, ...] = field(default=())
    # How the run went where it departed from the plain mode, one sentence each (fake mode's
    # data-dependent sizes, a retry that localised a failure): said, never silent.
    notes: tuple[str, ...] = field(default=())
    # What the forward wrote to the model and torch's global state, put back (`_trace`).
    writes: tuple[Write, ...] = field(default=())
    not_replayed: tuple[str, ...] = field(default=())  # why alike blocks all ran (fake mode)

    def __getitem__(self, path: str) -> ModuleRecord:
        try:
            return self.records[self._canonical(path)]
        except KeyError:
            close = closest(path, self.records)
            hint = f"; closest: {', '.join(map(repr, close))}" if close else ""
            why = "did not run in this probe" if self.records else "no module ran"
            raise KeyError(f"no module path {path!r} in the probe report ({why}){hint}") from None

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._canonical(path) in self.records

    def why_not_called(self, path: str) -> str | None:
        """Why `path` (or the listed module it sits under) ran no call; None when it ran, or when
        the report does not know (a failed run, an unknown path).

        Args:
            path: A module's dotted path.

        Returns:
            The reason in words, or None.

        Examples:
            >>> import torch, torch.nn as nn, torchxray as tx
            >>> class Net(nn.Module):
            ...     def __init__(self):
            ...         super().__init__()
            ...         self.used, self.spare = nn.Linear(4, 4), nn.Linear(4, 4)
            ...     def forward(self, x):
            ...         return self.used(x)
            >>> print(tx.probe(Net(), torch.randn(1, 4)).why_not_called("spare"))
            not called by Net.forward in this run: a branch these inputs do not take, or the parent uses its weights or settings directly (fused attention reads a dropout's p)
        """
        path = self._canonical(path)
        if path in self.records:
            return None
        probe = path
        while True:
            why = self.not_called.get(probe)
            if why is not None:
                return why if probe == path else f"inside {probe}, which ran no call: {why}"
            if not probe:
                return None
            probe = probe.rpartition(".")[0]

    def _canonical(self, path: str) -> str:
        """`path` resolved one component at a time, as ``get_submodule`` walks it: each prefix
        that is an alias becomes the first path of its module before the next name is added."""
        if path in self.records or not self.aliases:
            return path
        resolved = ""
        for part in path.split("."):
            resolved = f"{resolved}.{part}" if resolved else part
            resolved = self.aliases.get(resolved, resolved)
        return resolved

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def diff(self, other: ProbeReport) -> ProbeDiff:
        """Modules whose output shapes or dtypes differ from `self` (before) to `other` (after).

        Args:
            other: A later report of the same model (after a patch, or on other inputs).

        Returns:
            A `ProbeDiff` with `changed`, `added` and `removed` (`DiffEntry`: path, the outputs
            before and after, the classes before and after); false when nothing differs.

        Raises:
            TypeError: `other` is not a `ProbeReport`.

        Examples:
            >>> import torch, torch.nn as nn, torchxray as tx
            >>> model, x = nn.Sequential(nn.Linear(4, 8), nn.ReLU()), torch.randn(2, 4)
            >>> before = tx.probe(model, x)
            >>> _ = tx.PatchLog(model).edit("0", out_features=16)
            >>> d = before.diff(tx.probe(model, x))
            >>> [(e.path, str(e.before[0]), str(e.after[0])) for e in d.changed]
            [('', 'float32[2, 8]', 'float32[2, 16]'), ('0', 'float32[2, 8]', 'float32[2, 16]'), ('1', 'float32[2, 8]', 'float32[2, 16]')]
        """
        if not isinstance(other, ProbeReport):
            raise TypeError(f"diff() takes another ProbeReport, got {type(other).__name__}")
        mine, theirs = self.records, other.records
        if isinstance(mine, LazyRecords) and isinstance(theirs, LazyRecords):
            differ, new, gone = mine.compare(theirs)
        else:
            differ = [
                p
                for p in theirs
                if p in mine and _output_signature(mine, p) != _output_signature(theirs, p)
            ]
            new, gone = [p for p in theirs if p not in mine], [p for p in mine if p not in theirs]
        changed = [
            DiffEntry(p, mine[p].outputs, theirs[p].outputs, mine[p].cls, theirs[p].cls)
            for p in differ
        ]
        added = [DiffEntry(p, (), theirs[p].outputs, None, theirs[p].cls) for p in new]
        removed = [DiffEntry(p, mine[p].outputs, (), mine[p].cls, None) for p in gone]
        return ProbeDiff(tuple(changed), tuple(added), tuple(removed))

    def summary(self) -> str:
        """A short plain-text table (path, class, calls, output shapes, FLOPs) for quick looks.

        Returns:
            One line per record (a failed run's first line says ``FAILED:`` and why); for
            torchinfo's layout, see `torchxray.summary`.

        Examples:
            >>> import torch, torch.nn as nn, torchxray as tx
            >>> print(tx.probe(nn.Linear(4, 2), torch.randn(1, 4)).summary())
            (root)  Linear  x1  -> 1x2  16 FLOPs
        """
        lines = [] if self.ok else [f"FAILED: {self.error}"]
        for rec in self.records.values():
            shapes = ", ".join("x".join(map(str, s)) for s in rec.output_shapes) or "-"
            flops = "" if rec.flops is None else f"  {rec.flops:,} FLOPs"
            lines.append(f"{rec.path or '(root)'}  {rec.cls}  x{rec.calls}  -> {shapes}{flops}")
        return "\n".join(lines)
