"""The Explorer's controller, without any widget machinery: it holds the model, its tree, the
PatchLog and the last two probe reports, and answers validated protocol requests with JSON-able
replies. ``widget.py`` copies its state into traitlets; tests drive it directly.

``handle`` never raises: a bad request, an unknown path, a stale revision or a failing edit is
answered with ``{"kind": "error", ...}`` and leaves the model as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from torch import nn

from .._probe.cancel import Cancel
from .._probe.cancel import scope as cancel_scope
from ..forms import FormError, form
from ..patch import PatchEntry, PatchLog
from ..probe import ProbeReport, probe
from ..protocol import (
    SLOW,
    ChildrenRequest,
    EditRequest,
    FilterRequest,
    PingRequest,
    ProtocolError,
    RedoRequest,
    ReplaceRequest,
    RevealRequest,
    SelectRequest,
    UndoRequest,
    error_reply,
    validate,
)
from ..tree import ModelTree, walk
from . import panes, tools_classes, tools_compare, tools_flow, tools_memory, tools_probe
from . import serialize as ser
from .background import PROBING
from .replies import (
    ChildrenReply,
    FilterReply,
    HistoryState,
    Overview,
    PatchedReply,
    PongReply,
    ProbeSummary,
    Reply,
    RevealReply,
    SelectReply,
    TreeState,
)
from .snapshot import SNAPSHOT_NODES, snapshot

__all__ = ["ALL", "HANDLERS", "PROBE", "SELECT", "Session"]

# Which synced states a request changed (the widget re-sends those traitlets).
ALL = frozenset({"tree", "selected", "overview", "probe", "history"})
NONE: frozenset[str] = frozenset()
SELECT = frozenset({"selected", "overview"})
PROBE = frozenset({"tree", "overview", "probe"})
Result = tuple[Reply, frozenset[str]]


class Session:
    """State and request handling for one explored model."""

    def __init__(
        self,
        model: nn.Module,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        mode: str = "fake",
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"explore() needs a torch.nn.Module, got {type(model).__name__}; "
                "pass the model first, then example inputs: tx.explore(model, x)"
            )
        if mode not in ("fake", "real"):
            raise ValueError(f"probe mode must be 'fake' or 'real', got {mode!r}")
        self.model: nn.Module | None = model
        self.args = args
        self.kwargs = dict(kwargs or {})
        self.mode = mode
        # Some models can be explored but not patched (TorchScript): keep the view, refuse edits.
        self.log: PatchLog | None = None
        self.patch_refusal = ""
        try:
            self.log = PatchLog(model)
        except TypeError as e:
            self.patch_refusal = str(e)
        # Walked on first use (`tree`): in a kernel the widget's view is sent before the walk, so
        # the browser draws it while the kernel reads the model (`widget.py`, DEFERRED).
        self._tree: ModelTree | None = None
        self._walking = threading.Lock()
        # The Diff tab's base, taken on first use (1.4 s on 100k modules): first thing in the
        # widget's background probe, else by the first diff request or before the first patch.
        self._origin: tools_compare.Opened | None = None
        self.report: ProbeReport | None = None
        self.previous: ProbeReport | None = None
        self.probe_note = ""
        # In a kernel the widget probes in a background thread (`_view/background.py`): `defer`
        # makes run_probe leave the probe `pending` for it; `token` cancels the one running.
        self.defer = False
        self.pending = False
        self.token: Cancel | None = None
        self.rev = 0
        # The revision of the last model change: a probe alone bumps `rev` but leaves forms valid.
        self.model_rev = 0
        self.selected = ""

    @property
    def tree(self) -> ModelTree:
        """The model's tree, walked on first use (and again after every patch)."""
        if self._tree is None:
            with self._walking:
                if self._tree is None:
                    self._tree = walk(self._model())
        return self._tree

    @tree.setter
    def tree(self, tree: ModelTree | None) -> None:
        self._tree = tree

    @property
    def origin(self) -> tools_compare.Opened | None:
        if self._origin is None and self.model is not None:
            self._origin = tools_compare.Opened.of(self.model)
        return self._origin

    # -- state snapshots for the traitlets ----------------------------------------------------

    def rows(self) -> ser.RowMaker:
        return ser.RowMaker(self.report, self.log)

    def tree_state(self) -> TreeState:
        return ser.first_state(self.tree, self.rows(), self.rev)

    def outline_state(self) -> TreeState | None:
        """The first state from the walk alone (`TreeState.outline`: rows without counts, folds
        by structure), before the tree's tensors are read; None once they have been."""
        outline = self.tree.outline()
        return None if outline is None else ser.first_state(outline, self.rows(), self.rev)

    def overview(self) -> Overview:
        node = self.tree.get(self.selected) or self.tree.root
        rec = self.report.records.get(node.path) if self.report is not None else None
        why = self.report.why_not_called(node.path) if self.report is not None else None
        params = panes.forward_params(self.tree.module(node.path))
        return panes.overview(node, rec, why, params, tools_flow.site_rows(self, node.path))

    def probe_summary(self) -> ProbeSummary:
        return panes.probe_summary(self.report, self.previous, self.rev, self.probe_note)

    def history(self) -> HistoryState:
        if self.log is None:
            no: HistoryState = {"entries": [], "can_undo": False, "can_redo": False, "code": ""}
            return {**no, "note": self.patch_refusal}
        return panes.history_dict(self.log)

    # -- actions (also the Python API) ----------------------------------------------------------

    def run_probe(self, mode: str | None = None) -> None:
        if mode is not None:
            if mode not in ("fake", "real"):
                raise ValueError(f"probe mode must be 'fake' or 'real', got {mode!r}")
            self.mode = mode
        if not self.args and not self.kwargs:
            self.probe_note = (
                "no probe: pass example inputs, e.g. tx.explore(model, torch.randn(1, 3, 32, 32))"
            )
            return
        if self.defer:
            self.pending, self.probe_note = True, PROBING
            return
        self.install(self.compute_probe())

    def compute_probe(self) -> ProbeReport:
        """The probe alone, changing nothing here (``widget.py`` runs it in a thread); `cancel`
        from another thread stops it with `ProbeCancelled`."""
        self.token = token = Cancel()
        try:
            with cancel_scope(token):
                # The patch log lets a failure's hint name the edit it follows.
                log, mode = self.log, self.mode
                return probe(self._model(), *self.args, mode=mode, patch_log=log, **self.kwargs)
        finally:
            self.token = None

    def cancel(self) -> bool:
        """Stop the running probe at its next module call; False when none is running."""
        token = self.token
        if token is not None:
            token.set()
        return token is not None

    def install(self, report: ProbeReport) -> None:
        # After a cancelled or failed probe, `previous` stays the last report there was.
        self.previous, self.report = self.report or self.previous, report
        self.probe_note = ""
        self.rev += 1

    def changed(self) -> None:
        """After a patch: new tree, new probe."""
        if self.log is not None:
            self.model = self.log.model  # an edit of the root binds the rebuilt model
        self.tree = walk(self._model())
        self.rev += 1
        self.model_rev = self.rev
        if self.selected not in self.tree:
            self.selected = ""
        try:
            self.run_probe()
            if self.pending:  # probed in the background: meanwhile no shapes of the old model
                self.previous, self.report = self.report or self.previous, None
        except Exception as e:  # noqa: BLE001 - a broken probe must not break the view
            # No stale report: the view would show shapes of a model that no longer exists.
            self.previous, self.report = self.report, None
            self.probe_note = f"probe could not run: {type(e).__name__}: {e}"
        except KeyboardInterrupt:
            # The user stopped a slow (real) probe: the patch stands, its probe does not.
            self.previous, self.report = self.report, None
            self.probe_note = "probe interrupted: run it again from the Probe tab"
            raise

    def patch(self, op: str, *args: Any, **kwargs: Any) -> PatchEntry:
        _ = self.origin  # the model as opened, before its first change
        entry: PatchEntry = getattr(self.patch_log(), op)(*args, **kwargs)
        self.changed()
        return entry

    def select(self, path: str) -> str:
        node = self.tree[path]  # KeyError names close paths; aliases resolve to the node
        self.selected = node.path
        return node.path

    def snapshot(self, max_nodes: int = SNAPSHOT_NODES) -> dict[str, Any]:
        """The read-only view's data (``js/snapshot.ts``) for the first ``max_nodes`` modules."""
        return snapshot(self.tree, self.rows(), self.report, self.previous, self.rev, max_nodes)

    def close(self) -> None:
        self.model = None
        self.log = None
        self.tree = None  # type: ignore[assignment]
        self.report = self.previous = self._origin = None
        self.args, self.kwargs = (), {}

    def patch_log(self) -> PatchLog:
        if self.log is None:
            raise TypeError(self.patch_refusal or "this Explorer was closed")
        return self.log

    def _model(self) -> nn.Module:
        if self.model is None:
            raise RuntimeError("this Explorer was closed; call tx.explore(model) again")
        return self.model

    # -- requests from the frontend --------------------------------------------------------------

    def handle(self, msg: Any) -> Result:
        """(reply, names of the states it changed). Never raises."""
        try:
            req = validate(msg)
        except ProtocolError as e:
            kind = msg.get("kind") if isinstance(msg, dict) else None
            return error_reply(str(e), request=kind if isinstance(kind, str) else ""), NONE
        kind = req["kind"]
        if self.model is None:
            return error_reply("this Explorer was closed", request=kind), NONE
        rev = req.get("rev")
        if kind in SLOW and isinstance(rev, int) and not self.model_rev <= rev <= self.rev:
            return error_reply(
                f"stale request: the model changed since this form was opened (revision {rev}, now "
                f"{self.rev}); reopen it and apply again",
                request=kind,
            ), NONE
        try:
            return HANDLERS[kind](self, req)
        except FormError as e:
            return error_reply(
                str(e), fields={k or "__all__": v for k, v in e.errors.items()}, request=kind
            ), NONE
        except (KeyError, TypeError, ValueError, IndexError, RuntimeError) as e:
            text = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            return error_reply(f"{kind}: {text}", request=kind), NONE
        except Exception as e:  # noqa: BLE001 - the kernel must answer, whatever the model does
            return error_reply(f"{kind} failed: {type(e).__name__}: {e}", request=kind), NONE

    def _on_ping(self, req: PingRequest) -> tuple[PongReply, frozenset[str]]:
        return {"kind": "pong", "rev": self.rev}, NONE

    def _on_select(self, req: SelectRequest) -> tuple[SelectReply, frozenset[str]]:
        return {"kind": "select", "path": self.select(req["path"])}, SELECT

    def _on_children(self, req: ChildrenRequest) -> tuple[ChildrenReply, frozenset[str]]:
        parent = self.tree[req["path"]].path
        rows, offset, limit = self.rows(), req["offset"], req["limit"]
        if req["unfold"]:
            got = ser.unfold_page(self.tree, parent, rows, offset, limit or ser.PAGE)
        else:
            got = ser.page(self.tree, parent, rows, offset, limit)
        return {"kind": "children", "path": parent, **got}, NONE

    def _on_filter(self, req: FilterRequest) -> tuple[FilterReply, frozenset[str]]:
        got = ser.filter_rows(self.tree, self.rows(), req["query"], req["regex"], req["names"])
        return {"kind": "filter", **got}, NONE

    def _on_reveal(self, req: RevealRequest) -> tuple[RevealReply, frozenset[str]]:
        return {"kind": "reveal", "chain": ser.reveal_chain(self.tree, req["path"])}, NONE

    def _module(self, path: str | None) -> nn.Module:
        return self.tree.module(self.tree[path or ""].path)

    def _patched(self, op: str, *args: Any, **kwargs: Any) -> tuple[PatchedReply, frozenset[str]]:
        entry = self.patch(op, *args, **kwargs)
        return {"kind": "patched", "id": entry.id, "rev": self.rev}, ALL

    def _on_edit(self, req: EditRequest) -> tuple[PatchedReply, frozenset[str]]:
        path = self.tree[req["path"]].path
        changes = req["changes"]
        if not changes:
            raise ValueError("nothing to apply: no field was changed")
        errors = form(self.tree.module(path)).validate(**changes)
        if errors:
            raise FormError(errors)
        # Too large a module raises TooLarge, a FormError under "__confirm__": the form shows the
        # estimate with a "Build anyway" button, which sends the edit again with confirm. An inexact
        # edit raises Inexact under "__inexact__": "Apply anyway" sends it with inexact_ok.
        return self._patched(
            "edit", path, _confirm=req["confirm"], _inexact_ok=req["inexact_ok"], **changes
        )

    def _on_replace(self, req: ReplaceRequest) -> tuple[PatchedReply, frozenset[str]]:
        path = self.tree[req["path"]].path
        new = form(tools_classes.imported(self, req["cls"])).build(**req["changes"])
        return self._patched("replace", path, new, which=req["which"])

    def _on_undo(self, req: UndoRequest) -> tuple[PatchedReply, frozenset[str]]:
        return self._patched("undo")

    def _on_redo(self, req: RedoRequest) -> tuple[PatchedReply, frozenset[str]]:
        return self._patched("redo")


# One handler per request kind (tests/test_protocol.py checks that it covers REQUESTS). A table,
# not a name built from the kind: every entry point into the session is listed here.
HANDLERS: dict[str, Callable[[Session, Any], Result]] = {
    "ping": Session._on_ping,
    "select": Session._on_select,
    "children": Session._on_children,
    "filter": Session._on_filter,
    "reveal": Session._on_reveal,
    "edit": Session._on_edit,
    "replace": Session._on_replace,
    "undo": Session._on_undo,
    "redo": Session._on_redo,
    **tools_classes.HANDLERS,  # source, form, mro, catalog, asset (a module's class, read)
    **tools_compare.HANDLERS,  # pick, plan, bulk, peft, diff, stats, health (issue #15)
    **tools_memory.HANDLERS,  # memory, figures (the Memory tab)
    **tools_probe.HANDLERS,  # probe, probe_table, cancel
    **tools_flow.HANDLERS,  # flow, graph (the call tree and the Graph tab, issue #18)
}
