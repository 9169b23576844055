"""The replies and synced states of the protocol (``_view/panes.py``, ``serialize.py`` build them);
``protocol.py`` pairs each request kind with its reply, ``js/protocol_gen.ts`` is made from both."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Literal, TypeAlias

from typing_extensions import NotRequired, TypedDict

from . import compare_types as ct
from . import compile_types as cpt
from . import export_types as xt
from . import flow_types as ft
from . import ranks_types as rkt
from . import summary_types as st
from . import watch_types as wt

# A tree row's markers; js/tree_row.ts labels each (a Record<Mark, ...>, so tsc fails on drift).
Mark: TypeAlias = Literal[
    "alias",
    "hooks",
    "fwd",
    "custom",
    "param",
    "wrap",
    "patched",
    "error",
    "inside_error",  # an ancestor of the module the last probe failed in
    "contract",
    "frozen",  # has parameters, none of them trainable
    "break",  # its own forward graph-breaks under torch.compile (the last compile check)
]


class NodeRow(TypedDict):
    """One module row of the tree."""

    path: str
    name: str
    cls: str
    nkids: int
    params: NotRequired[int]  # parameters in the subtree; not in an outline (not counted yet)
    # Once probed: the first output tensor, named by where it sat in what the module returned,
    # and how many more ("logits: 1×8×100 +9"); a lone tensor returned as is: its shape alone.
    out: NotRequired[str]
    out_all: NotRequired[str]  # every output, "name: shape" one a line, when there are several
    marks: NotRequired[list[Mark]]
    alias_of: NotRequired[str]  # an alias path: the canonical path of the same module object
    placement: NotRequired[str]  # only where unusual: offloaded, DTensor / FSDP2, several devices
    not_called: NotRequired[str]  # the last probe saw no call of it: why
    # What its forward wrote to itself in the last probe, as the row's badge names it
    # ("writes self.seen"); the probe put it back (`ProbeReport.writes`).
    writes: NotRequired[list[str]]
    depth: NotRequired[int]  # filter results and snapshots only
    match: NotRequired[bool]  # filter results only


class FoldRow(TypedDict):
    """`fold` structurally identical siblings shown as one row ("x80 LlamaDecoderLayer")."""

    fold: int
    parent: str
    start: int
    cls: str
    first: str
    last: str


class MoreRow(TypedDict):
    """Children not sent yet: the row asks for the next page when activated."""

    more: int
    parent: str
    offset: int
    unfold: bool


Item: TypeAlias = NodeRow | FoldRow | MoreRow


class Page(TypedDict):
    items: list[Item]
    total: int
    offset: int


class TreeState(TypedDict):
    rev: int
    root: NodeRow
    pages: dict[str, Page]
    # A big model's first state, from the walk alone (`_tree/outline.py`): rows without counts,
    # runs folded by structure; the full state follows once the kernel has read the tensors.
    outline: NotRequired[bool]  # rows of the walk alone; the full tree follows
    # The rev of the model's last change: a probe alone moves `rev` only, so a form typed into
    # stays as it is when the probe's results arrive.
    model_rev: NotRequired[int]


class HookRow(TypedDict):
    kind: str
    name: str


class BufferRow(TypedDict):
    name: str
    shape: str
    dtype: str


class OverviewProbe(TypedDict):
    calls: int
    inputs: str
    outputs: str
    flops: int | None
    time_ms: float | None
    mem_alloc: int | None
    mem_peak: int | None
    # Where forward's annotations disagree with what the probe saw (a warning, not a failure):
    # "forward says `b c h w` but got 3 dims".
    contract: list[str]


class Overview(TypedDict):
    path: str
    name: str
    cls: str
    qualname: str
    params_own: int
    params_total: int
    trainable_total: int
    bytes_total: int
    bytes_local: int  # what one rank holds (a DTensor's local shard); else bytes_total
    placement: str  # "cpu", "offloaded: disk (runs on cpu)", "DTensor Shard(0) on mesh (4,)"
    devices: list[str]
    dtypes: list[str]
    training: bool
    hooks: list[HookRow]
    aliases: list[str]
    container: str | None
    parametrizations: list[str]
    wraps: str | None
    forward_patched: bool
    is_custom: bool
    extra_repr: str
    nkids: int
    buffers: list[BufferRow]
    probe: OverviewProbe | None
    not_called: NotRequired[str | None]  # why the last probe saw no call of it, when it knows
    sites: NotRequired[list[ft.SiteRow]]  # where the last probe saw it called from
    # Each write of its forward in the last probe, a sentence each ("writes self.seen (container:
    # 1 item added)"); the root's also lists those outside any module (torch's flags, a file).
    writes: NotRequired[list[str]]


class ProbeError(TypedDict):
    path: str
    cls: str
    exc_type: str
    message: str
    hint: str
    input_shapes: str
    # "real" when fake tensors cannot run an op of this forward and the real probe can (the pane
    # offers "Run real probe"); "" otherwise.
    remedy: str


class ProbeSummary(TypedDict):
    ok: bool | None  # no probe ran when null
    mode: str
    status: str
    count: int
    error: ProbeError | None
    changed: int
    rev: int
    # The report shown is not the model's latest word: a probe runs, or the last one was
    # cancelled or could not run (the status says so first, then what the shown report said).
    stale: bool


class HistoryEntry(TypedDict):
    id: int
    op: str
    paths: list[str]
    old_cls: str
    new_cls: str
    changes: dict[str, str]
    code: str


class HistoryState(TypedDict):
    entries: list[HistoryEntry]
    can_undo: bool
    can_redo: bool
    code: str
    note: NotRequired[str]  # why this model cannot be patched (e.g. TorchScript)


class FormField(TypedDict):
    name: str
    kind: str
    text: str
    default: str | None
    required: bool
    choices: list[str]
    origin: str
    annotation: str
    optional: bool
    group: str  # a config argument's sub-fields name it ("config"); "" otherwise
    read: bool | None  # the class's own code reads this config field (None: unknown)
    note: str  # why the value is what it is (an argument recorded uncopied, ...)


class ProbeRow(TypedDict):
    path: str
    cls: str
    calls: int
    inputs: str
    outputs: str
    status: Literal["same", "changed", "added", "failed"]
    before: str | None  # the output shapes (or class) of the previous probe, when changed
    flops: int | None
    time_ms: float | None
    mem_peak: int | None


class MroClass(TypedDict):
    name: str
    qualname: str
    module: str
    group: str
    defines: list[str]
    node: str  # the class's node id in the DOT graph


class CatalogRow(TypedDict):
    name: str
    qualname: str
    group: str
    doc: str


class RevealStep(TypedDict):
    parent: str
    index: int


class PongReply(TypedDict):
    kind: Literal["pong"]
    rev: int


class SelectReply(TypedDict):
    kind: Literal["select"]
    path: str


class ChildrenReply(Page):
    kind: Literal["children"]
    path: str


class FilterResult(TypedDict):
    count: int  # matches, before the row limit
    rows: list[NodeRow]  # the matches and their ancestors, in tree order, with depth and match
    truncated: bool


class FilterReply(FilterResult):
    kind: Literal["filter"]


class RevealReply(TypedDict):
    kind: Literal["reveal"]
    chain: list[RevealStep]


class SourceReply(TypedDict):
    kind: Literal["source"]
    html: str | None  # Pygments markup; None when there is no source (see `reason`)
    file: str | None
    line: int | None
    reason: str | None
    qualname: str
    forward_lines: tuple[int, int] | None
    note: str | None  # e.g. "showing the original class of a parametrized module"
    # "In [3]" when the class was defined in a notebook cell: the header names the cell (and the
    # line in it), not the kernel's temporary file that `file` is then.
    cell: str | None


class FormReply(TypedDict):
    kind: Literal["form"]
    path: str
    cls: str
    qualname: str
    fields: list[FormField]
    rev: int
    aliases: list[str]
    hint: str  # why values are missing or guessed, and how to get exact ones; "" if none
    # "" when the unchanged rebuild equals the live module, else one line: "inexact: norm1 would
    # be GroupNorm(32, 32), the live one is GroupNorm(8, 32)" (Apply is refused until confirmed).
    inexact: str
    # "" when Apply can change the model, else why not (said before Apply: a TorchScript model).
    refusal: str


class PatchedReply(TypedDict):
    kind: Literal["patched"]
    id: int
    rev: int


class ProbeReply(ProbeSummary):
    kind: Literal["probe"]


class CancelReply(TypedDict):
    kind: Literal["cancel"]
    running: bool  # whether a probe was running (it stops at its next module call)


class ProbeTableReply(TypedDict):
    kind: Literal["probe_table"]
    rows: list[ProbeRow]
    total: int
    removed: list[str]
    # After a failed probe: the outermost modules it stopped before (not removed; what is under
    # them was not reached either), and how many modules that is in all.
    not_reached: list[str]
    not_reached_total: int
    # After a successful probe: the outermost modules their parent's forward did not call -> why
    # (a fused fast path, weights used directly, unused); nothing under them was called either.
    not_called: NotRequired[dict[str, str]]
    rev: int


class MroReply(TypedDict):
    kind: Literal["mro"]
    dot: str
    classes: list[MroClass]


class CatalogReply(TypedDict):
    kind: Literal["catalog"]
    entries: list[CatalogRow]


class AssetReply(TypedDict):
    kind: Literal["asset"]
    name: Literal["viz"]
    code: str


class DeviceSize(TypedDict):
    name: str  # "CPU RAM", "cuda:0 (NVIDIA H200)"
    bytes: int  # total memory


class MemoryReply(TypedDict):
    """Bytes of the selected subtree in a fake forward or training step, and the whole model's
    peak to compare with the devices present."""

    kind: Literal["memory"]
    path: str
    training: bool
    optimizer: str  # "none" when not training
    device: str  # where the fake step ran
    dtypes: list[str]  # of the subtree's weights
    params: int  # weights: parameters and buffers
    grads: int
    optimizer_state: int
    activations: int  # saved for backward (training only)
    peak: int  # the subtree's highest live total while it ran; 0 when it was not called
    model_peak: int  # the whole model's peak: what "fits on" compares
    devices: list[DeviceSize]
    note: str  # e.g. why activations are 0 in inference


class FiguresReply(TypedDict):
    """One figure per path asked for, for colouring the tree; `total` is the model's (the scale)."""

    kind: Literal["figures"]
    figure: str
    values: dict[str, float | None]  # None: not known for that module (not called, no probe)
    total: float | None
    note: str  # why the figure is missing, e.g. "no probe has run"


class ErrorReply(TypedDict):
    kind: Literal["error"]
    message: str
    fields: NotRequired[dict[str, str]]  # field -> its own message (form errors)
    request: NotRequired[str]  # the kind of the request it answers


Reply: TypeAlias = (
    PongReply | SelectReply | ChildrenReply | FilterReply | RevealReply | SourceReply | FormReply |
    PatchedReply | ProbeReply | ProbeTableReply | MroReply | CatalogReply | AssetReply | ErrorReply |
    MemoryReply | FiguresReply | CancelReply |
    ct.PickReply | ct.PlanReply | ct.PeftReply | ct.DiffReply | ct.StatsReply | ct.HealthReply |
    ft.FlowReply | ft.GraphReply | st.SummaryReply | wt.TrainSeriesReply | wt.TrainControlReply | wt.TrainFiguresReply | wt.TrainPollReply | cpt.CompileReply | rkt.RanksReply | rkt.RanksPlanReply | xt.ExportReply
)  # fmt: skip
