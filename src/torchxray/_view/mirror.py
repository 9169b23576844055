"""The Explorer's Python API (``ex.select``, ``ex.edit``, ``ex.undo``, ``ex.probe_report``,
``ex.summary``, ``ex.compile_check``, ``ex.ranks``, ``ex.to_html``...): each call does what the view's request does, through the same Session, and re-sends the states it
changed. A mixin of ``widget.Explorer``, which holds the traitlets, the lock and the background probe.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, overload

from torch import nn

from .._compile.records import CompileReport
from ..patch import PatchEntry
from ..probe import ProbeReport
from ..ranks import RanksPlan
from ..summary import summarize
from . import assets
from .host import ALL, COMPILE, EXPORT, PROBE, RANKS, SELECT, States
from .ranks_link import Recipe
from .session import Session
from .tools_summary import NO_PROBE

__all__ = ["STATE", "PythonApi"]

# The synced states a standalone page starts from (ALL and the probe mode).
STATE = (*sorted(ALL), "probe_mode")


class PythonApi:
    """The Explorer's methods for notebook code. What they need of the widget is declared here
    and defined by ``widget.Explorer``: the lock, the session, the joins and syncs."""

    _lock: threading.RLock
    _probe_asked: bool
    busy: str
    snapshot: dict[str, Any]

    def _live(self) -> Session:
        raise NotImplementedError

    def _join(self, timeout: float | None = None) -> bool:
        raise NotImplementedError

    def _sync(self, changed: States) -> None:
        raise NotImplementedError

    @property
    def model(self) -> nn.Module:
        """The explored model as it is now (after an edit of the root, the rebuilt one)."""
        return self._live().live_model()

    @property
    def probe_report(self) -> ProbeReport | None:
        """The last probe (None when no example inputs were given); waits for one running in the
        background, so that a notebook's next cell reads the report as it did before."""
        self._join()
        return self._live().report

    @property
    def patches(self) -> tuple[PatchEntry, ...]:
        """The patches applied so far, oldest first (`PatchLog.entries`)."""
        log = self._live().log
        return log.entries if log is not None else ()

    def select(self, path: str) -> str:
        """Select the module at ``path`` in the view; returns its canonical path.

        Args:
            path: A dotted path (an alias path selects its module's first path).

        Returns:
            The path selected.

        Raises:
            KeyError: No module at `path` (the message names the closest paths).
        """
        with self._lock:
            found = self._live().select(path)
            self._sync(SELECT)
        return found

    def edit(self, path: str | None = None, **hyperparameters: Any) -> PatchEntry:
        """``PatchLog.edit`` on ``path`` (default: the selected module), then re-probe.

        Args:
            path: The module to rebuild; None: the selected one.
            **hyperparameters: Constructor arguments to change, as `PatchLog.edit` takes them.

        Returns:
            The new `PatchEntry`.

        Raises:
            FormError: A value is invalid; nothing changed.
        """
        return self._patch(
            "edit", self._live().selected if path is None else path, **hyperparameters
        )

    def replace(self, path: str, new_module: nn.Module, which: str = "all") -> PatchEntry:
        """``PatchLog.replace``, then re-probe.

        Args:
            path: The module to replace.
            new_module: A built module.
            which: ``"all"`` paths of that module, or ``"this"`` one.

        Returns:
            The new `PatchEntry`.
        """
        return self._patch("replace", path, new_module, which=which)

    def replace_all(self, match: Any, factory: Any) -> PatchEntry:
        """``PatchLog.replace_all``, then re-probe.

        Args:
            match: A class, a tuple of classes, or a regex that fully matches paths.
            factory: Old module -> its replacement.

        Returns:
            The new `PatchEntry`.
        """
        return self._patch("replace_all", match, factory)

    def undo(self) -> PatchEntry:
        """Undo the last patch (the History tab's Undo), then re-probe.

        Returns:
            The entry undone.
        """
        return self._patch("undo")

    def redo(self) -> PatchEntry:
        """Redo the last undone patch, then re-probe.

        Returns:
            The entry redone.
        """
        return self._patch("redo")

    def run_probe(self, mode: str | None = None) -> ProbeReport | None:
        """Probe again (``mode`` "fake" or "real"; default: the current mode). Also runs the
        probe that ``tx.explore(..., probe=False)`` skipped.

        Args:
            mode: ``"fake"`` or ``"real"``; None keeps the current mode.

        Returns:
            The new `ProbeReport` (None without example inputs).
        """
        self._probe_asked = False  # this runs it (a first probe left until asked for)
        self._join()
        s = self._live()
        self.busy = "probe"
        try:
            with self._lock:
                s.run_probe(mode)
        finally:
            self.busy = ""
            self._sync(PROBE)
        return s.report

    @property
    def compile_report(self) -> CompileReport | None:
        """The last compile check (``ex.compile_check()``, the Compile tab's Check, or the
        re-check after a patch); None before the first, or when the last could not run."""
        return self._live().compile_report

    def compile_check(self, options: dict[str, Any] | None = None) -> CompileReport:
        """``tx.compile_check`` on the explored model and its example inputs (in the probe's
        mode; ``options`` as ``tx.compile_check``'s, e.g. ``{"mode": "real"}``), shown in the
        Compile tab and on the tree's rows; from now on it runs again after every patch (Apply,
        Undo, Redo, ``ex.edit``...). ValueError when the explorer has no example inputs.

        Args:
            options: As `torchxray.compile_check` takes them.

        Returns:
            The `CompileReport` (also `compile_report`).

        Raises:
            ValueError: The explorer has no example inputs.
        """
        self._join()
        s = self._live()
        self.busy = "compile"
        try:
            with self._lock:
                return s.run_compile(options)
        finally:
            self.busy = ""
            self._sync(COMPILE)

    @property
    def export_report(self) -> Any:
        """The last export check (``ex.export_check()`` or the Export tab's Check), an
        ``ExportReport``; None before the first."""
        return self._live().export_report

    def export_check(self, options: dict[str, Any] | None = None) -> Any:
        """``tx.export_check`` on the explored model and its example inputs (in the probe's mode:
        ``tx.explore(model, x, mode="real")`` measures drift; ``options`` as ``tx.export_check``'s,
        merged over the last check's), shown in the Export tab and on the tree's rows. It does not run again by itself: after a patch the tab says it is stale,
        and the next check lists what changed. ValueError when the explorer has no inputs."""
        self._join()
        s = self._live()
        self.busy = "export"
        try:
            with self._lock:
                return s.run_export(options)
        finally:
            self.busy = ""
            self._sync(EXPORT)

    @property
    def ranks_plan(self) -> RanksPlan | None:
        """The plan the Ranks tab shows (``tx.explore(..., ranks=plan)``, ``ex.ranks``), or None."""
        return self._live().ranks.plan

    def ranks(
        self,
        plan: RanksPlan | Any = None,
        mesh: dict[str, int] | None = None,
        *,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
        budget: int | None | bool = False,
        **options: Any,
    ) -> RanksPlan:
        """Show a plan in the Ranks tab, and badge the rows that hold sharded tensors or run
        collectives; returns it.

            ex.ranks(plan)                          # a plan from tx.ranks(model, ...)
            ex.ranks(parallelize, mesh={"dp": 4})   # tx.ranks on the explored model, here
            ex.ranks()                              # plan again (after Apply / Undo)

        ``args`` / ``kwargs``: one rank's inputs (default: the explorer's example inputs);
        ``options`` go to ``tx.ranks`` (``step``, ``sample_blocks``, ``timeout``); ``budget``:
        bytes per rank the tab compares each rank's peak with (None: no budget; left out: the
        one given before).

        Args:
            plan: A `RanksPlan`, or a ``parallelize(model, mesh)`` function to plan with; None
                plans again with what was used last.
            mesh: The mesh, with a parallelize function.
            args: One rank's positional inputs.
            kwargs: One rank's keyword inputs.
            budget: Bytes per rank.
            **options: Passed to `torchxray.ranks`.

        Returns:
            The `RanksPlan` shown (also `ranks_plan`).

        Raises:
            TypeError: A plan with other arguments, or a function without a mesh.
        """
        self._join()  # the model changes only once the probe is done with it
        s = self._live()
        link = s.ranks
        self.busy = "ranks"
        try:
            with self._lock:
                model = s.live_model()
                if plan is None and mesh is None:
                    if budget is not False and link.plan is not None:
                        link.attach(link.plan, model, link.model_rev, link.recipe, budget)
                        return link.plan
                    return link.replan(model, s.model_rev)
                if isinstance(plan, RanksPlan):
                    if mesh is not None or args is not None or kwargs is not None or options:
                        raise TypeError(
                            "ex.ranks(plan) takes the plan alone (and budget=); to plan here, "
                            "pass the parallelize function: ex.ranks(parallelize, mesh={...})"
                        )
                    return link.attach(plan, model, s.model_rev, budget=budget)
                if not callable(plan) or mesh is None:
                    raise TypeError(
                        "ex.ranks() takes a plan from tx.ranks(...), or a parallelize function "
                        "and a mesh: ex.ranks(parallelize, mesh={'dp': 2, 'tp': 2})"
                    )
                a = tuple(s.args) if args is None else tuple(args)
                kw = dict(s.kwargs) if args is None and kwargs is None else dict(kwargs or {})
                recipe = Recipe(plan, dict(mesh), a, kw, dict(options))
                return link.plan_now(model, s.model_rev, recipe, budget)
        finally:
            self.busy = ""
            self._sync(RANKS)

    def to_code(self) -> str:
        """Python that replays this session's patches on a fresh model (``PatchLog.to_code``).

        Returns:
            The code; ``""`` before the first patch.
        """
        log = self._live().log
        return log.to_code() if log is not None else ""

    def summary(self, depth: int | None = None) -> str:
        """The text summary of the model as it is now (``tx.summary``'s: the tree to ``depth``,
        output shapes from the last probe, the break count of the last compile check, totals); ``print(ex)`` prints the same. Waits for a
        probe running in the background.

        Args:
            depth: Levels below the model to show; None: the deepest that fits 80 rows.

        Returns:
            The summary as text.
        """
        self._join()
        with self._lock:
            s = self._live()
            return summarize(
                s.tree,
                s.report,
                depth=depth,
                note=s.probe_note or NO_PROBE,
                compile_report=s.compile_report,
            ).text()

    def save_snapshot(self) -> None:
        """Store a read-only snapshot in the widget state, so that a notebook saved with widget
        state shows the tree and panes without a kernel (actions disabled)."""
        self._join()
        self.snapshot = dict(self._live().snapshot())

    @overload
    def to_html(self, path: None = None) -> str: ...
    @overload
    def to_html(self, path: str | os.PathLike[str]) -> Path: ...
    def to_html(self, path: str | os.PathLike[str] | None = None) -> str | Path:
        """A standalone HTML page (bundle and current state inlined, no network) that browses the
        tree and panes read-only. With ``path``, the page is written there and the path returned:
        a notebook cell ending in ``ex.to_html("model.html")`` shows that path, not megabytes of
        page (the page text would also be saved into the notebook).

        Args:
            path: Where to write the page; None returns its text.

        Returns:
            The page's text, or the path written.
        """
        self._join()
        state = {name: getattr(self, name) for name in STATE}
        state.update(readonly=True, snapshot=self._live().snapshot())
        title = f"torchxray: {self._live().tree.root.cls}"
        page = assets.standalone_page(state, title)
        if path is None:
            return page
        target = Path(path)
        target.write_text(page, encoding="utf-8")
        return target

    def _patch(self, op: str, *args: Any, **kwargs: Any) -> PatchEntry:
        self._join()  # the model changes only once the probe is done with it
        s = self._live()
        self.busy = op
        try:
            with self._lock:
                return s.patch(op, *args, **kwargs)
        finally:
            self.busy = ""
            self._sync(ALL)
