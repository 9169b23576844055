"""Messages of the Export tab (``tools_export.py``) and its synced state: which ops torch.export,
ONNX, ExecuTorch and AOTInductor cannot take, per module (``tx.export_check`` on the explorer's
example inputs), as the ``export_state`` traitlet carries it (``ExportState``), and the request
that runs the check (``export``). Declared apart from ``protocol.py`` and ``replies.py``, which
add them to their unions and ``REPLIES``; ``protocol_ts.py`` generates their TypeScript."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

# -- requests -----------------------------------------------------------------------------------


class ExportRequest(TypedDict):
    """Run the check (the Check button) for these targets (none: the last ones, else the
    check's default); it runs again only when asked (a patch marks it stale)."""

    kind: Literal["export"]
    targets: NotRequired[Annotated[list[str], []]]


# -- replies and the synced state ---------------------------------------------------------------


class ExportTargetRow(TypedDict):
    """One target's verdict (`TargetResult`)."""

    target: str
    status: str  # "ok", "fails", "not installed", "not checked", "error"
    message: str
    seconds: float
    delegated: int  # ExecuTorch: ops delegated to XNNPACK (0 elsewhere)
    portable: int


class ExportIssueRow(TypedDict):
    """One `ExportIssue`."""

    target: str
    path: str
    cls: str
    op: str
    kind: str
    reason: str
    file: str
    line: int
    source: str
    count: int
    blocking: bool  # False for an op left to ExecuTorch's portable kernels
    # The class of the module's MRO whose source holds the line (the Source tab opens it there);
    # null when the line is outside every class of it.
    src_cls: str | None


ExportStatus = Literal["none", "running", "ok", "fails", "error"]


class ExportState(TypedDict):
    """The ``export_state`` traitlet: the last check, or why there is none."""

    status: ExportStatus
    stale: bool  # the model changed since: Check runs it again and says what changed
    mode: str
    asked: list[str]  # the targets it was run for
    targets: list[ExportTargetRow]
    issues: list[ExportIssueRow]
    # path -> target -> "ok" / "fails" / "not checked" / "delegated" / "portable" /
    # "partly delegated": the tree's colour per target
    rows: dict[str, dict[str, str]]
    drift: dict[str, list[float]]  # path -> [max abs, max rel]
    changes: list[str]  # what changed since the check before it (after a patch), one a line
    error: str
    notes: list[str]
    wall_ms: float
    rev: int


class ExportReply(ExportState):
    kind: Literal["export"]
