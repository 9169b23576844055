"""The Explorer's controller, without any widget machinery: it holds the model, its tree, the
PatchLog and the last two probe reports, and answers validated protocol requests with JSON-able
replies. ``widget.py`` copies its state into traitlets; tests drive it directly.

``handle`` never raises: a bad request, an unknown path, a stale revision or a failing edit is
answered with ``{"kind": "error", ...}`` and leaves the model as it was.
"""

from __future__ import annotations

import threading
from typing import Any

from torch import nn

from .. import _gc
from .._compile.records import CompileReport
from .._probe.cancel import scope as cancel_scope
from ..compile import compile_check
from ..forms import Form, FormError, form
from ..patch import PatchEntry, PatchLog
from ..probe import ProbeReport, probe
from ..protocol import PROBE_MODES, SLOW, ProtocolError, error_reply, validate
from ..tree import ModelTree, walk
from ..watch import Watch
from . import panes, probe_panes, tools_flow
from . import serialize as ser
from .background import PROBING
from .compile_types import CompileState
from .compile_view import break_paths, compile_state
from .export_link import ExportLink
from .export_types import ExportState
from .handlers import HANDLERS
from .host import NONE, Caches, Result
from .origin import Opened
from .ranks_link import RanksLink
from .ranks_types import RanksState
from .ranks_view import ranks_state
from .replies import HistoryState, Overview, ProbeSummary, TreeState
from .schedule import Schedule
from .snapshot import SNAPSHOT_NODES, snapshot
from .snapshot_types import Snapshot

__all__ = ["TRAINING_NOTE", "Session", "probe_mode"]

TRAINING_NOTE = "probe waits while the model trains: Run probe (Probe tab) once the loop ends"


def probe_mode(mode: str) -> str:
    """``mode`` when it is a probe mode; ValueError otherwise."""
    if mode not in PROBE_MODES:
        raise ValueError(f"probe mode must be 'fake' or 'real', got {mode!r}")
    return mode


class Session:
    """State and request handling for one explored model."""

    def __init__(
        self,
        model: nn.Module,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        mode: str = "fake",
        schedule: Schedule | None = None,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(
                f"explore() needs a torch.nn.Module, got {type(model).__name__}; "
                "pass the model first, then example inputs: tx.explore(model, x)"
            )
        self.model: nn.Module | None = model
        self.args = args
        self.kwargs = dict(kwargs or {})
        self.mode = probe_mode(mode)
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
        # The Diff tab's base, taken on first use (slow on a big model: it lists every tensor):
        # first thing in the widget's background probe, else by the first diff request or before
        # the first patch.
        self._origin: Opened | None = None
        self.report: ProbeReport | None = None
        self.previous: ProbeReport | None = None
        self.probe_note = ""
        # In a kernel the widget probes in a background thread (`_view/background.py`): the
        # schedule says when run_probe leaves the probe pending for it, and cancels the one running.
        self.schedule = schedule if schedule is not None else Schedule()
        self.caches = Caches()  # what handlers derive from the tree or the report
        self.rev = 0
        # The revision of the last model change: a probe alone bumps `rev` but leaves forms valid.
        self.model_rev = 0
        self.selected = ""
        self.watch: Watch | None = None  # ex.watch: edits keep its optimizer true
        self.training_now = False  # answering between two steps of a running loop
        # The last compile check (the Compile tab, ex.compile_check()): not free, so it runs when
        # asked for, then again after every patch (`compile_on`), as the probe does.
        self.compile_report: CompileReport | None = None
        self.compile_on = False
        self.compile_options: dict[str, Any] | None = None
        self.compile_note = ""  # why there is no report, when the check could not run
        self.compile_pending = False  # a patch's re-check, left to follow the background probe
        self.compile_rev = 0  # the revision it was made at
        self.ranks = RanksLink()  # the Ranks tab's plan (tx.explore(..., ranks=plan), ex.ranks)
        self.export = ExportLink()  # the Export tab's last check (ex.export_check())
        self.job: Any = None  # a training job feeding the Training tab (_view/attach_view.py)
        self.attach_rank: int | None = None

    @property
    def tree(self) -> ModelTree:
        """The model's tree, walked on first use (and again after every patch)."""
        if self._tree is None:
            with self._walking:
                if self._tree is None:
                    self._tree = walk(self.live_model())
        return self._tree

    @tree.setter
    def tree(self, tree: ModelTree | None) -> None:
        self._tree = tree

    @property
    def origin(self) -> Opened | None:
        if self._origin is None and self.model is not None:
            self._origin = Opened.of(self.model, self._tree)
        return self._origin

    # -- the synced states (one Explorer traitlet each) ----------------------------------------

    def rows(self) -> ser.RowMaker:
        return ser.RowMaker(self.report, self.log, break_paths(self.compile_report))

    def tree_state(self) -> TreeState:
        return ser.first_state(self.tree, self.rows(), self.rev, self.model_rev)

    def outline_state(self) -> TreeState | None:
        """The first state from the walk alone (`TreeState.outline`: rows without counts, folds
        by structure), before the tree's tensors are read; None once they have been."""
        outline = self.tree.outline()
        if outline is None:
            return None
        return ser.first_state(outline, self.rows(), self.rev, self.model_rev)

    def overview(self) -> Overview:
        node = self.tree.get(self.selected) or self.tree.root
        rec = self.report.records.get(node.path) if self.report is not None else None
        why = self.report.why_not_called(node.path) if self.report is not None else None
        params = panes.forward_params(self.tree.module(node.path))
        sites = tools_flow.site_rows(self, node.path)
        writes = panes.write_lines(self.report, node.path, self.tree)
        return panes.overview(node, rec, why, params, sites, writes)

    def probe_summary(self) -> ProbeSummary:
        return probe_panes.probe_summary(self.report, self.previous, self.rev, self.probe_note)

    def compile_state(self) -> CompileState:
        return compile_state(
            self.compile_report,
            self.model,
            on=self.compile_on,
            rev=self.compile_rev,
            note=self.compile_note,
            running=self.compile_pending,
        )

    def export_state(self) -> ExportState:
        return self.export.state(self.model, self.model_rev)

    @property
    def export_report(self) -> Any:
        return self.export.report

    def run_export(self, options: dict[str, Any] | None = None) -> Any:
        """``tx.export_check`` on the model and example inputs (``ExportLink.run``). ValueError
        without example inputs or while the model trains; TypeError / ValueError for a bad
        option."""
        if not self.args and not self.kwargs:
            raise ValueError(
                "the export check needs example inputs: tx.explore(model, x) with the inputs "
                "the model's forward takes"
            )
        if self.training_now:
            raise ValueError("the export check waits while the model trains: Check once it ends")
        revs = (self.rev, self.model_rev)
        return self.export.run(self.live_model(), self.args, self.kwargs, self.mode, options, revs)

    def ranks_state(self) -> RanksState:
        return ranks_state(self.ranks, self.model_rev)

    def history(self) -> HistoryState:
        if self.log is None:
            no: HistoryState = {"entries": [], "can_undo": False, "can_redo": False, "code": ""}
            return {**no, "note": self.patch_refusal}
        return panes.history_dict(self.log)

    # -- actions (also the Python API) ----------------------------------------------------------

    def run_probe(self, mode: str | None = None) -> None:
        if mode is not None:
            self.mode = probe_mode(mode)
        if self.training_now:  # the loop goes on after this answer: the probe would race it
            self.previous, self.report = self.report or self.previous, None
            self.probe_note = TRAINING_NOTE
            return
        if not self.args and not self.kwargs:
            self.probe_note = (
                "no probe: pass example inputs, e.g. tx.explore(model, torch.randn(1, 3, 32, 32))"
            )
            return
        if self.schedule.ask():
            self.probe_note = PROBING
            return
        self.install(self.compute_probe())

    def compute_probe(self) -> ProbeReport:
        """The probe alone, changing nothing here but a patch's compile re-check, which follows
        it (``widget.py`` runs both in a thread, so that Apply does not wait for them, and sends
        the check with the probe's states: host.PROBE); `cancel` from another thread stops the
        probe with `ProbeCancelled`."""
        with self.schedule.running() as token, cancel_scope(token):
            # The patch log lets a failure's hint name the edit it follows.
            log, mode = self.log, self.mode
            try:
                report = probe(
                    self.live_model(), *self.args, mode=mode, patch_log=log, **self.kwargs
                )
            except BaseException:  # cancelled or interrupted: no check either
                self._skip_recheck()
                raise
        if self.compile_pending and not self.schedule.closing:
            self._recompile()
        return report

    def run_compile(self, options: dict[str, Any] | None = None) -> CompileReport:
        """``tx.compile_check`` on the model and example inputs, in the probe's mode unless
        ``options`` says otherwise; from now on it runs again after every patch, with the same
        options. ValueError without example inputs; TypeError for a bad option."""
        if not self.args and not self.kwargs:
            raise ValueError(
                "the compile check needs example inputs: tx.explore(model, x) with the inputs "
                "the model's forward takes"
            )
        opts = {"mode": self.mode, **(options or {})}
        report = compile_check(self.live_model(), *self.args, options=opts, **self.kwargs)
        self.compile_on, self.compile_options = True, options
        self.compile_report, self.compile_note, self.compile_rev = report, "", self.rev
        return report

    def _skip_recheck(self) -> None:
        if self.compile_pending:
            self.compile_pending = False
            self.compile_note = "the compile check did not run after the last patch: Check runs it"

    def _recompile(self) -> None:
        """After a patch: the check again, once it was asked for."""
        self.compile_report, self.compile_pending = None, False
        if self.training_now:  # the loop goes on after this answer: the check would race it
            self.compile_note = "the compile check waits while the model trains: Check once it ends"
            return
        # Said until it finishes: a kernel interrupt leaves it, and no stale breaks on the rows.
        self.compile_note = (
            "the compile check did not finish after the last patch: Check runs it again"
        )
        try:
            self.run_compile(self.compile_options)
        except Exception as e:  # noqa: BLE001 - a failed check must not fail the patch
            self.compile_note = f"the compile check could not run: {type(e).__name__}: {e}"

    def cancel(self) -> bool:
        """Stop the running probe at its next module call; False when none is running."""
        return self.schedule.cancel()

    def _base(self) -> ProbeReport | None:
        """What the next report is compared with: the last report there was, or, when that one
        failed (it stopped early, so most modules would read as new), the last one that passed.
        Undoing back to the model that last passed then reads "0 changed". When none passed yet
        (a first fake run that could not run, then the real one), there is nothing to compare."""
        last = self.report or self.previous
        if last is not None and not last.ok:
            return self.previous if self.previous is not None and self.previous.ok else None
        return last

    def install(self, report: ProbeReport) -> None:
        # After a cancelled or failed probe, `previous` stays the last report there was.
        self.previous, self.report = self._base(), report
        self.probe_note = ""
        self.rev += 1

    def changed(self) -> None:
        """After a patch: new tree, new probe."""
        if self.log is not None:
            self.model = self.log.model  # an edit of the root binds the rebuilt model
        self.tree = walk(self.live_model())
        self.rev += 1
        self.model_rev = self.rev
        if self.selected not in self.tree:
            self.selected = ""
        if self.compile_on:  # runs after the probe: here, or where it runs in the background
            self.compile_report, self.compile_pending = None, True
        try:
            self.run_probe()
            if (
                self.schedule.pending
            ):  # probed in the background: meanwhile no shapes of the old model
                self.previous, self.report = self._base(), None
        except Exception as e:  # noqa: BLE001 - a broken probe must not break the view
            # No stale report: the view would show shapes of a model that no longer exists.
            self.previous, self.report = self._base(), None
            self.probe_note = f"probe could not run: {type(e).__name__}: {e}"
        except KeyboardInterrupt:
            # The user stopped a slow (real) probe: the patch stands, its probe does not.
            self.previous, self.report = self._base(), None
            self.probe_note = "probe interrupted: run it again from the Probe tab"
            self._skip_recheck()
            raise
        if self.compile_pending and not self.schedule.pending:  # no background probe to follow
            self._recompile()

    def reread(self) -> bool:
        """The model's hooks changed (a watch opened or closed), not the model: its tree read
        again if it was read (the rows' hook badges); True if so."""
        if self._tree is None or self.model is None:
            return False
        self.tree = walk(self.model)
        self.rev += 1
        return True

    def patch(self, op: str, *args: Any, **kwargs: Any) -> PatchEntry:
        _ = self.origin  # the model as opened, before its first change
        log = self.patch_log()

        def apply() -> PatchEntry:
            entry: PatchEntry = getattr(log, op)(*args, **kwargs)
            return entry

        w = self.watch
        if w is not None and not w.closed:  # between training steps: the optimizer follows
            what = f"{op} of {args[0]!r}" if args and isinstance(args[0], str) else op
            entry = w.patched(apply, log.undo, what)
        else:
            entry = apply()
        self.changed()
        return entry

    def select(self, path: str) -> str:
        node = self.tree[path]  # KeyError names close paths; aliases resolve to the node
        self.selected = node.path
        return node.path

    def snapshot(self, max_nodes: int = SNAPSHOT_NODES) -> Snapshot:
        """The read-only view's data (``js/snapshot.ts``) for the first ``max_nodes`` modules."""
        return snapshot(self, max_nodes)

    def close(self) -> None:
        self.model = None
        self.log = None
        self.tree = None  # type: ignore[assignment]
        self.report = self.previous = self._origin = None
        self.compile_report = None
        self.export.close()
        self.ranks.close()
        self.args, self.kwargs = (), {}
        self.caches.clear()

    def patch_log(self) -> PatchLog:
        if self.log is None:
            raise TypeError(self.patch_refusal or "this Explorer was closed")
        return self.log

    def live_model(self) -> nn.Module:
        """The model; RuntimeError once the Explorer was closed."""
        if self.model is None:
            raise RuntimeError("this Explorer was closed; call tx.explore(model) again")
        return self.model

    def module(self, path: str | None) -> nn.Module:
        """The live module at ``path`` (an alias resolves; KeyError names close paths)."""
        return self.tree.module(self.tree[path or ""].path)

    def form(self, module: nn.Module) -> Form:
        """The form of a module of the model, opened once per state of the model: the log's
        (``PatchLog.form``), which every patch of this session goes through."""
        return self.log.form(module) if self.log is not None else form(module)

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
            # No collection while answering: an Apply's new slot index, walk and report made the
            # collector rescan a big model's heap over and over (bench/README.md).
            with _gc.paused():
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
