"""Messages of the selection, compare and health tools (``tools_compare.py``): multi-select, bulk
freeze/replace, PEFT targets, the Diff tab, parameter statistics and non-finite weights. Declared
apart from ``protocol.py`` and ``replies.py`` so that neither grows past its size; ``protocol.py``
adds the requests to its ``Request`` union and ``REPLIES``, ``replies.py`` the replies to ``Reply``,
and ``protocol_ts.py`` generates the TypeScript of both."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

# -- requests -----------------------------------------------------------------------------------


class PickRequest(TypedDict):
    kind: Literal["pick"]
    query: str  # the tree filter's query: every match, not only the rows the filter shows
    regex: NotRequired[Annotated[bool, False]]
    names: NotRequired[Annotated[bool, False]]  # the filter's "names only"


class PlanRequest(TypedDict):
    kind: Literal["plan"]
    paths: NotRequired[Annotated[list[str], []]]
    cls: NotRequired[Annotated[str | None, None]]  # the class a bulk replace would build


class BulkRequest(TypedDict):
    kind: Literal["bulk"]
    op: Literal["freeze", "unfreeze", "replace"]
    paths: NotRequired[Annotated[list[str], []]]
    cls: NotRequired[Annotated[str | None, None]]  # replace: the catalog class
    changes: NotRequired[Annotated[dict[str, str], {}]]  # replace: fields for every new module
    prefill: NotRequired[Annotated[bool, False]]  # replace: each from its old module's values
    rev: NotRequired[Annotated[int | None, None]]  # the revision it was made at: refused when stale


class PeftRequest(TypedDict):
    kind: Literal["peft"]
    paths: NotRequired[Annotated[list[str], []]]
    r: NotRequired[Annotated[int, 8]]


class DiffRequest(TypedDict):
    kind: Literal["diff"]
    against: Literal["open", "checkpoint"]
    file: NotRequired[Annotated[str, ""]]  # the checkpoint's path (.safetensors, .pt, .bin)


class StatsRequest(TypedDict):
    kind: Literal["stats"]
    path: str


class HealthRequest(TypedDict):
    kind: Literal["health"]
    paths: NotRequired[Annotated[list[str], []]]  # the rows in view: only their weights are read


# -- replies ------------------------------------------------------------------------------------


class PickReply(TypedDict):
    kind: Literal["pick"]
    paths: list[str]


class PlanReply(TypedDict):
    kind: Literal["plan"]
    count: int  # modules a bulk replace would swap (outermost, shared ones once)
    classes: dict[str, int]  # their classes -> how many
    note: str  # what would happen, or why nothing would


class PeftLayer(TypedDict):
    path: str
    cls: str
    in_features: int
    out_features: int
    lora: int  # r * (in + out)


class PeftReply(TypedDict):
    kind: Literal["peft"]
    targets: str  # the target_modules value as Python source
    r: int
    lora_params: int
    layers: list[PeftLayer]
    skipped: list[str]  # selected modules that are neither Linear nor Conv (LoRA adds no count)


class DiffRow(TypedDict):
    path: str  # a module path, or a tensor name
    kind: str  # added, removed, retyped, changed, values, shape, dtype, missing, unexpected
    detail: str
    rel_change: float | None
    module: str | None  # the tree row it belongs to; None when it is no longer in the model


class DiffReply(TypedDict):
    kind: Literal["diff"]
    label: str  # what the model was compared against
    rows: list[DiffRow]
    total: int  # rows before the limit
    badges: dict[str, str]  # module path -> its row badge
    counts: dict[str, int]  # kind -> how many


class StatRow(TypedDict):
    name: str
    shape: str
    dtype: str
    numel: int
    norm: float | None
    mean: float | None
    std: float | None
    min: float | None
    max: float | None
    zeros: int
    nonfinite: int
    hist: list[int]
    skipped: str | None


class StatsReply(TypedDict):
    kind: Literal["stats"]
    path: str
    rows: list[StatRow]


class HealthReply(TypedDict):
    kind: Literal["health"]
    nonfinite: list[str]  # of the paths asked about: those whose own weights hold NaN or Inf
    probe_path: str | None  # the last real probe's first module with non-finite outputs
    probe_note: str
