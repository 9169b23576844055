"""Messages of the Compile tab (``tools_compile.py``) and its synced state: where
``torch.compile`` would graph-break and ``torch.export`` fails (``tx.compile_check`` on the
explorer's example inputs), as the ``compile`` traitlet carries it (``CompileState``), and the
request that runs the check (``compile``); the tree folds to the breaking rows through the
``filter`` request (``breaks``). Declared apart from ``protocol.py`` and ``replies.py``, which add them to their
unions and ``REPLIES``; ``protocol_ts.py`` generates their TypeScript."""

# No `from __future__ import annotations`: the TypedDicts' annotations are read at run time.
from typing import Literal

from typing_extensions import TypedDict

# -- requests -----------------------------------------------------------------------------------


class CompileRequest(TypedDict):
    """Run the check (the Check button); from then on it runs again after every patch."""

    kind: Literal["compile"]


# -- replies and the synced state ---------------------------------------------------------------


class BreakRow(TypedDict):
    """One graph break (`GraphBreak`), in forward order."""

    path: str  # the innermost module whose own forward holds it ("" = the root)
    cls: str
    kind: str  # torch's graph-break type
    reason: str
    hint: str  # one hint a line
    url: str  # torch's page on this break ('' when torch names none)
    file: str  # '' when there is no Python source
    line: int
    source: str  # that line's text
    # The class of the module's MRO whose source holds the line (the Source tab marks it there);
    # null when the line is outside every class of it (a helper function, torch's own code).
    src_cls: str | None


class ExportRow(TypedDict):
    """One `ExportFailure` of ``torch.export.export(..., strict=False)``."""

    path: str
    cls: str
    kind: str
    reason: str
    file: str
    line: int


CompileStatus = Literal["none", "running", "ok", "breaks", "error"]


class CompileState(TypedDict):
    """The ``compile`` traitlet: the last check, or why there is none."""

    # "none": not run; "running": a patch's re-check follows the background probe; "error": it
    # could not run (see `error`)
    status: CompileStatus
    on: bool  # it was asked for once: it runs again after every patch
    mode: str  # "fake" or "real": the inputs it traced with
    breaks: list[BreakRow]
    export: list[ExportRow]
    export_ok: bool
    error: str  # one sentence when the check could not run or finish
    notes: list[str]  # what was not checked, and why
    modules: int  # modules the example inputs reached
    checked: int  # distinct traces run
    wall_ms: float
    rev: int  # the session revision it was made at


class CompileReply(CompileState):
    kind: Literal["compile"]
