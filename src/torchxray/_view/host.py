"""What a request handler sees of the session: ``Host`` (the ``Session`` has it; the handlers'
modules take it instead of importing the session, which imports them), the names of the synced
states a request changes, and the shape every handler has:

    def on_<kind>(host: Host, req: <Kind>Request) -> tuple[<Kind>Reply, States]

``_view/handlers.py`` lists the handlers by kind; ``tests/test_protocol.py`` checks each one's
request and reply types against ``protocol.REQUEST_TYPES`` and ``protocol.REPLIES``.

    >>> sorted(ALL - PROBE)
    ['export_state', 'history', 'ranks_state', 'selected']
    >>> DEFERRED <= ALL and NONE == frozenset()
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from torch import nn

    from .._compile.records import CompileReport
    from ..forms import Form
    from ..patch import PatchEntry, PatchLog
    from ..probe import ProbeReport
    from ..tree import ModelTree
    from ..watch import Watch
    from .compile_types import CompileState
    from .export_types import ExportState
    from .origin import Opened
    from .ranks_link import RanksLink
    from .replies import ProbeSummary, Reply
    from .serialize import RowMaker

__all__ = [
    "ALL",
    "COMPILE",
    "EXPORT",
    "DEFERRED",
    "NONE",
    "PROBE",
    "RANKS",
    "SELECT",
    "Caches",
    "Handler",
    "Host",
    "Result",
    "States",
]

# The synced states, by the name of the Explorer traitlet that carries each (and of the Session
# method that makes it): a handler returns the ones it changed, and the widget re-sends those.
States = frozenset[str]
NONE: States = frozenset()
SELECT: States = frozenset({"selected", "overview"})
# A probe changes the rows' shapes and marks, the Overview's inputs and outputs, and its summary
# (and a patch's compile re-check follows the background probe: `Session.compute_probe`).
PROBE: States = frozenset({"tree_state", "overview", "probe_summary", "compile"})
# A compile check changes the Compile tab's state and the rows' "break" marks.
COMPILE: States = frozenset({"compile", "tree_state"})
# A plan attached to the Ranks tab (the rows' badges are drawn from it in the view).
RANKS: States = frozenset({"ranks_state"})
# An export check changes the Export tab's state (its rows' marks are drawn from it in the view).
EXPORT: States = frozenset({"export_state"})
# A patch changes everything (the selection too, when the selected module is gone; the compile
# check runs again once it was asked for; a ranks plan becomes stale).
ALL: States = PROBE | SELECT | COMPILE | RANKS | EXPORT | {"history"}
# The states that need the model's walk: in a kernel they follow the view (`_view/schedule.py`).
DEFERRED: States = frozenset({"tree_state", "overview"})

T = TypeVar("T")


class Caches:
    """Values a handler derives from the session's tree or last report, kept until that changes:
    ``get(name, source, make)`` gives the value made from ``source`` (compared by identity) and
    makes it again once ``source`` is another object.

    >>> c, a, b = Caches(), object(), object()
    >>> c.get("x", a, list) is c.get("x", a, list), c.get("x", a, list) is c.get("x", b, list)
    (True, False)
    """

    def __init__(self) -> None:
        self._slots: dict[str, tuple[object, object]] = {}

    def get(self, name: str, source: object, make: Callable[[], T]) -> T:
        got = self._slots.get(name)
        if got is None or got[0] is not source:
            got = self._slots[name] = (source, make())
        return got[1]  # type: ignore[return-value]  # made by `make` for this name

    def clear(self) -> None:
        self._slots.clear()


class Host(Protocol):
    """The session as the handlers read and change it."""

    rev: int
    model_rev: int  # the revision of the model's last change
    selected: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    probe_note: str
    patch_refusal: str  # why Apply cannot change this model ('' when it can), said before Apply
    caches: Caches
    watch: Watch | None  # the training lens shown (ex.watch), if any
    ranks: RanksLink  # the Ranks tab's plan
    training_now: bool  # answering between two steps of a running loop (no probe then)
    job: Any  # an attached training job (torchxray.attach.Job) feeding the Training tab, if any
    attach_rank: int | None  # the job's rank the Training tab shows (None: the worst rank)

    @property
    def tree(self) -> ModelTree: ...
    @property
    def report(self) -> ProbeReport | None: ...
    @property
    def previous(self) -> ProbeReport | None: ...
    @property
    def log(self) -> PatchLog | None: ...
    @property
    def origin(self) -> Opened | None: ...

    def live_model(self) -> nn.Module:
        """The model; RuntimeError once the Explorer was closed."""
        ...

    def module(self, path: str | None) -> nn.Module:
        """The live module at ``path`` (an alias resolves; KeyError names close paths)."""
        ...

    def form(self, module: nn.Module) -> Form:
        """The form of a module of the model, opened once per state of the model (the patch
        log's, ``PatchLog.form``): the Form tab, Apply's check and its edit share it."""
        ...

    def rows(self) -> RowMaker: ...
    def select(self, path: str) -> str: ...
    def patch(self, op: str, *args: Any, **kwargs: Any) -> PatchEntry: ...
    def run_probe(self, mode: str | None = None) -> None: ...
    def probe_summary(self) -> ProbeSummary: ...
    def cancel(self) -> bool: ...
    @property
    def compile_report(self) -> CompileReport | None: ...
    def run_compile(self, options: dict[str, Any] | None = None) -> CompileReport: ...
    def compile_state(self) -> CompileState: ...
    def run_export(self, options: dict[str, Any] | None = None) -> Any: ...
    def export_state(self) -> ExportState: ...


Result = tuple["Reply", States]
Handler = Callable[[Host, Any], Result]
