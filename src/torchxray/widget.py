"""The Explorer widget: traitlets (state the view shows) and one command, ``rpc``, through which the
frontend sends ``kind``-tagged requests (see ``protocol.py``). All the work is in
``_view/session.py``.

    ex = tx.explore(model, torch.randn(1, 3, 32, 32))   # shown as the cell's value
    ex.select("layer1.0.conv1"); ex.edit("layer1.0.conv1", out_channels=32); ex.undo()
    ex.probe_report.ok, ex.patches, print(ex.to_code()); ex.close()

The synced state, and the probe mode, which refuses anything but the two modes:

    >>> sorted(Explorer.class_own_traits(sync=True))
    ['busy', 'compile', 'error', 'export_state', 'history', 'overview', 'probe_mode', 'probe_summary', 'ranks_state', 'readonly', 'selected', 'snapshot', 'training', 'tree_state']
    >>> Explorer.class_own_traits()["probe_mode"].values
    ('fake', 'real')
    >>> Explorer.class_own_traits()["probe_mode"].validate(None, "turbo")
    Traceback (most recent call last):
    ...
    traitlets.traitlets.TraitError: The 'probe_mode' trait expected any of ['fake', 'real'], not the str 'turbo'.
"""

from __future__ import annotations

import threading
from typing import Any

import anywidget
import traitlets as t
from anywidget.experimental import command
from torch import nn

from . import _gc
from ._probe.cancel import ProbeCancelled
from ._view import assets, attach_view, background, static_html, training
from ._view.host import ALL, PROBE, States
from ._view.mirror import PythonApi
from ._view.ranks_link import take_plan
from ._view.schedule import Schedule
from ._view.session import Session
from .probe import ProbeReport
from .protocol import PROBE_MODES, SLOW, Reply, error_reply
from .watch import Watch

__all__ = ["Explorer", "explore"]


class Explorer(PythonApi, anywidget.AnyWidget):  # type: ignore[misc]
    """Explore and edit a live ``nn.Module``. Build it with ``tx.explore(model, *example_inputs)``.

    Shown as a cell's value, it is the widget: the module tree, and tabs for the selected module
    (Overview, Source, Form, MRO, Graph, Probe, History, Diff, Memory, Training, Compile, Ranks).
    From Python, each method does what the view's button does, through the same session:
    `select`, `edit`, `replace`, `replace_all`, `undo`, `redo`, `run_probe`, `compile_check`,
    `ranks`, `watch`, `summary`, `to_code`, `to_html`; `print(ex)` prints the text summary.

    Args:
        model: The model to explore (changed in place by edits; see `PatchLog`).
        *args: Example positional inputs; they drive the shape probe.
        mode: The probe's mode, ``"fake"`` or ``"real"``.
        probe: False skips the first probe (`run_probe` runs it).
        **kwargs: Example keyword inputs (``ranks=plan`` shows a `RanksPlan` in the Ranks tab).

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> from torchxray import demo
        >>> ex = tx.explore(demo.resnet_ish(), demo.images())
        >>> ex.select("layer1.0.conv1")
        'layer1.0.conv1'
        >>> entry = ex.edit(out_channels=24)  # the selected module; the probe runs again
        >>> ex.probe_report.ok, ex.probe_report.error.path
        (False, 'layer1.0.bn1')
        >>> _ = ex.undo(); ex.probe_report.ok
        True
        >>> ex.close()
    """

    # One traitlet per synced state, named as the Session method that makes it (`_view/host.py`).
    tree_state = t.Dict().tag(sync=True)
    selected = t.Unicode("").tag(sync=True)
    overview = t.Dict().tag(sync=True)
    probe_summary = t.Dict().tag(sync=True)
    history = t.Dict().tag(sync=True)
    busy = t.Unicode("").tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    # An Enum, not free text: a bad mode (from Python or the frontend) fails loudly, naming both.
    probe_mode = t.Enum(PROBE_MODES, default_value="fake").tag(sync=True)
    readonly = t.Bool(False).tag(sync=True)
    snapshot = t.Dict().tag(sync=True)
    training = t.Dict().tag(sync=True)  # the Training tab: ex.watch's state (_view/training.py)
    compile = t.Dict().tag(sync=True)  # the Compile tab: the last check (_view/compile_view.py)
    ranks_state = t.Dict().tag(sync=True)  # the Ranks tab: the plan shown (_view/ranks_view.py)
    export_state = t.Dict().tag(sync=True)  # the Export tab: the last check (_view/export_view.py)

    # Class settings (bench.flows --set NAME=VALUE sets them for an A/B). Shown after the widget as
    # a second output: a read-only tree for a notebook reopened without its kernel or saved widget
    # state. Set False on the class to show the widget alone.
    static_fallback = True
    # In a kernel the first probe waits until the view has drawn (its first request) or this many
    # seconds: a probe started at once competes with the display for the interpreter and slows
    # the first paint of a big model. Anything that needs the report starts it at once.
    first_probe_delay = 1.0
    # In a kernel the tree and the Overview follow the view (`_view/schedule.py`); False sends them
    # with it (bench/browser.py times the tree's own first paint from the view's insertion).
    tree_after_view = True
    # ...and a model of at least this many modules sends its outline before its tree (the rows of
    # the walk alone, `_tree/outline.py`) while the kernel reads every tensor (bench/README.md).
    outline_from = 10_000
    # Outside a kernel or a marimo notebook (a script), a model of at least this many modules
    # returns with its outline; the full tree and the probe follow when first asked for (the
    # report, a summary, a save, a request): seconds at 100,000 modules (bench/README.md, "issue
    # 55"). Why not a background probe there: docs/guide/hosts-and-scale.md.
    probe_when_asked_from = 10_000
    _one_line = False  # set while the display asks for repr(self) (`_repr_mimebundle_`)

    def __init__(
        self, model: nn.Module, *args: Any, mode: str = "fake", probe: bool = True, **kwargs: Any
    ) -> None:
        self._static: Any = None  # the stand-in's display handle, once shown
        # Held while the session's state changes or is copied into traitlets: the first probe
        # installs its report from a thread (`_view/background.py`).
        self._lock = threading.RLock()
        self._background = background.Background()
        self._training: training.TrainingLink | None = None
        training.follow_watches(self)  # a watch closed: the rows drop their hook badges
        self._schedule = Schedule(False, self.first_probe_delay)
        cls = type(self)
        if not isinstance(cls.__dict__.get("_esm"), str):
            cls._esm, cls._css = assets.bundle()
        plan, (model, job, probe) = take_plan(kwargs), attach_view.take_job(model, kwargs, probe)
        session = Session(model, args, kwargs, mode=mode, schedule=self._schedule)
        if plan is not None:
            session.ranks.attach(plan, model, session.model_rev)
        self._session: Session | None = session
        super().__init__(probe_mode=mode)
        # Where the host shows the view meanwhile and takes state sent later (a kernel, a marimo
        # notebook: `_view/background.py`), probes run in a background thread, and the states that
        # need the walk (the tree and the root's Overview) go after the view itself: at its
        # display in a kernel (`_ipython_display_`), else with the view's first request, so the
        # browser draws the view while the model is walked; any sync of the Python API sends them
        # too if never displayed.
        self._later = background.later(self)
        if self._later and self.tree_after_view:
            self._schedule.defer_view()
        # Outside a kernel, a big model: its outline now, the rest when asked for (see above).
        when_asked = not self._later and len(session.tree) >= self.probe_when_asked_from
        self._probe_asked = False  # a first probe left for the first thing that needs it
        if when_asked:
            self._schedule.defer_view()
        self.observe(self._on_mode, names="probe_mode")
        if not probe:
            session.probe_note = "probe skipped (probe=False): ex.run_probe() runs it"
        attach_view.show(self, session, job)  # the Training tab fed by a job, if any
        if probe and (args or kwargs) and self._later:
            # The tree shows now; the probe's results fill in when it is done.
            self._start_probe(first=True)
        else:
            # The Diff tab's base (session.origin, slow on a big model) is taken lazily, by the
            # first patch or diff request: in the background after the probe it slowed whatever
            # the kernel did next (bench/README.md, "Figures behind choices").
            if probe and (args or kwargs) and when_asked:
                self._probe_asked = True
                session.probe_note = background.WHEN_ASKED
            elif probe:
                self._probe_now(session)
            self._sync(ALL)
        self._schedule.built()
        if when_asked and len(session.tree) >= self.outline_from:
            self._outline(session)  # the first state: the rows of the walk
        elif when_asked:
            self._flush()
        self._ready = True  # repr(self) may read the session now

    # -- the probe, now or in the background ------------------------------------------------

    def _probe_now(self, session: Session) -> None:
        try:
            session.run_probe()
        except Exception as e:  # noqa: BLE001 - show the model even when its probe cannot run
            session.probe_note = f"probe could not run: {type(e).__name__}: {e}"

    def _start_probe(self, first: bool = False) -> None:
        session = self._live()
        session.probe_note = background.PROBING
        # Apply and Undo are disabled while the kernel is busy (and wait for the probe anyway).
        self.busy = "probe"
        self._sync(ALL)

        def job() -> None:
            note = ""
            report: ProbeReport | None = None
            if first:
                # Not while the kernel walks the model for the view: wait for the tree to go out.
                if not self._schedule.first_probe_may_start():
                    return
                self._flush()  # never displayed: the deferred states go out now
            try:
                report = session.compute_probe()
            except ProbeCancelled as e:
                note = f"{e}; Run probe (Probe tab) runs it again"
            except Exception as e:  # noqa: BLE001 - the thread must finish and say why
                note = f"probe could not run: {type(e).__name__}: {e}"
            with self._lock:
                if self._session is not session:  # closed meanwhile: nothing to show
                    return
                if report is not None:
                    session.install(report)
                else:
                    session.probe_note = note
                self._sync(PROBE)
                self.busy = ""

        self._background.start(job)

    def cancel(self) -> bool:
        """Stop the probe running in the background at its next module call (the Cancel button
        of the widget); the model is left as it was. False when no probe was running.

        Returns:
            Whether a probe was running.
        """
        session = self._session
        return session is not None and session.cancel()

    def wait(self, timeout: float | None = None) -> ProbeReport | None:
        """Wait for a probe running in the background (``tx.explore`` in a kernel starts one);
        returns the report (None when there is none yet: ``timeout`` passed, or no inputs).

        Args:
            timeout: Seconds to wait at most; None waits until it is done.

        Returns:
            The `ProbeReport`, or None.
        """
        self._join(timeout)
        return self._live().report

    def _join(self, timeout: float | None = None) -> bool:
        """Wait for the background probe, starting a first probe that still waits for the view
        (or, outside a kernel, running the one left until asked for)."""
        self._schedule.release()
        self._asked()  # first: its sync sends the deferred tree once, with the shapes
        self._flush()  # what the Python API reads (e.g. to_html) includes the tree
        return self._background.wait(timeout)

    def _asked(self) -> None:
        """Run the first probe left until something needs it (``probe_when_asked_from``)."""
        session = self._session
        if not self._probe_asked or session is None:
            return
        self._probe_asked = False
        with self._lock:
            self._probe_now(session)
            self._sync(PROBE)

    @property
    def probing(self) -> bool:
        """Whether the first probe is still running in the background."""
        return self._background.running

    def watch(self, optimizer: Any = None, every: int = 10, **kwargs: Any) -> Watch:
        """``tx.watch`` on the explored model, shown in the Training tab while the loop runs
        (see ``torchxray.watch``); an earlier one of this Explorer is closed first.

        Args:
            optimizer: The training loop's optimizer.
            every: Sample the figures every this many steps.
            **kwargs: `thresholds`, `update_ratio`, as `torchxray.watch` takes them.

        Returns:
            The `Watch`; its Pause holds the loop between steps while the widget answers.
        """
        return training.open_watch(self, self._live(), optimizer, every, **kwargs)

    # -- the frontend's requests ------------------------------------------------------------

    @command  # type: ignore[misc]
    def rpc(self, msg: Any, buffers: list[bytes]) -> tuple[Reply, list[bytes]]:
        """Answer one request from the view; never raises (errors are ``{"kind": "error"}``
        replies). The frontend calls it; notebook code uses the methods above.

        Args:
            msg: A request, ``{"kind": ..., ...}`` as `torchxray.protocol` declares it.
            buffers: Binary buffers sent with it (unused).

        Returns:
            The reply and its buffers.
        """
        kind = msg.get("kind") if isinstance(msg, dict) else None
        self._schedule.view_drew()  # the first probe may start
        session = self._session
        if session is None:
            return error_reply("this Explorer was closed", request=str(kind or "")), []
        slow = isinstance(kind, str) and kind in SLOW
        if kind == "probe":
            self._probe_asked = False  # this request runs it
        if slow:  # Apply, Undo...: the background probe first (outside the lock: it takes it)
            self._join()
            self.busy = str(kind)
        try:  # in a kernel (or marimo) a slow request's probe runs in the background (Cancel)
            with self._lock, self._schedule.answering(slow and self._later):
                self._flush()  # a view drawn without _ipython_display_ (e.g. inside a VBox)
                reply, changed = session.handle(msg)
                if changed:
                    self._sync(changed)
            if slow:
                self.error = reply["message"] if reply["kind"] == "error" else ""
        except Exception as e:  # noqa: BLE001 - syncing state must not raise into the kernel either
            reply = error_reply(f"{kind}: {type(e).__name__}: {e}")
        except KeyboardInterrupt:
            # Kernel interrupt during a slow request: answer it, or the view waits for its
            # timeout; the model may have changed before the interrupt, so re-send the state.
            self._sync(ALL)
            reply = error_reply(f"{kind}: interrupted", request=str(kind))
        finally:
            if slow:
                self.busy = ""
        if self._schedule.take_pending() and self._session is session:
            self._start_probe()
        self._asked()  # the view shows: the probe left until asked for runs now
        return reply, []

    def _handle_custom_msg(self, content: Any, buffers: list[bytes]) -> None:
        # anywidget indexes its command table with the message's name and id unchecked; answer a
        # malformed envelope here instead of letting a KeyError reach the kernel's log.
        link = self._training
        if link is not None and link.claimed(content):
            return  # answered between training steps already (_view/train_pump.py)
        if isinstance(content, dict) and content.get("kind") == "anywidget-command":
            name, mid = content.get("name"), content.get("id")
            if name != "rpc" or not isinstance(mid, str) or "msg" not in content:
                if isinstance(mid, (str, int)) and not isinstance(mid, bool):
                    why = (
                        "no 'msg' in the command" if name == "rpc" else f"unknown command {name!r}"
                    )
                    reply = error_reply(f"{why}; the only command is 'rpc' with a 'msg'")
                    self.send({"id": mid, "kind": "anywidget-command-response", "response": reply})
                return
        super()._handle_custom_msg(content, buffers)

    def __repr__(self) -> str:
        # print(ex), repr(ex) in a terminal or script: the text summary (`ex.summary()`). The
        # display's text/plain (`_repr_mimebundle_`) and the stand-in's headline stay one line.
        if self._one_line or not getattr(self, "_ready", False) or self._session is None:
            return self._line()
        try:
            return self.summary()
        except Exception as e:  # noqa: BLE001 - a repr never raises
            return f"{self._line()}\n(no summary: {type(e).__name__}: {e})"

    def _line(self) -> str:
        """``torchxray Explorer: ResNet, 94 modules, 11.2M params; probe ok``: the text fallback."""
        s = getattr(self, "_session", None)
        if s is None or s.model is None:
            return static_html.summary_line(None, None, None)
        if self._schedule.waiting:  # the view's own display, before the walk: what is known now
            return f"torchxray Explorer: {type(s.model).__name__}"
        rep = s.report
        failed = rep.error.path if rep is not None and rep.error is not None else None
        return static_html.summary_line(s.tree, None if rep is None else rep.ok, failed)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        # The text/plain ipywidgets puts beside the view is repr(self): one line there, not a
        # summary (whose walk the deferred display must not wait for).
        self._one_line = True
        try:
            return super()._repr_mimebundle_(**kwargs)
        finally:
            self._one_line = False

    def _stand_in(self) -> dict[str, str]:
        with self._lock:
            s = self._live()
            return {"text/html": static_html.static_html(s.tree, s.rows(), self._line())}

    def _ipython_display_(self) -> None:
        from IPython.display import display

        if self._repr_mimebundle_ is None:  # closed: ipywidgets dropped the view
            display({"text/plain": self._line()}, raw=True)
            return
        if background.in_terminal():  # IPython in a terminal draws no widget: the summary instead
            display({"text/plain": repr(self)}, raw=True)
            return
        bundle = self._repr_mimebundle_()
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        display(data, metadata=meta, raw=True)
        # The view is on its way to the browser, which loads and draws it meanwhile: now walk.
        self._flush()
        if self.static_fallback and self._session is not None:
            self._static = display(self._stand_in(), raw=True, display_id=True)

    def _flush(self) -> None:
        """Send the deferred states now, if they have not gone out yet."""
        if self._schedule.waiting:
            self._sync(frozenset())

    def _sync(self, changed: States) -> None:
        s = self._session
        if s is None:
            return
        with self._lock:
            changed, first = self._schedule.outgoing(changed)
            try:
                if first:
                    self._outline(s)
                self._push(s, changed)
            except BaseException:  # e.g. the kernel interrupted during the walk: send it next time
                if first:
                    self._schedule.unsent()
                raise
            if first:
                self._schedule.sent()

    def _outline(self, s: Session) -> None:
        """Send the outline of a big model's tree at once (see `outline_from`); the full tree
        follows with the next push."""
        if len(s.tree) >= self.outline_from and (state := s.outline_state()) is not None:
            self.tree_state = dict(state)

    def _push(self, s: Session, changed: States) -> None:
        # Building the states makes a new report's records and the rows: no collection meanwhile.
        with _gc.paused(), self.hold_sync():
            if "tree_state" in changed:
                self.tree_state = dict(s.tree_state())
            if "selected" in changed:
                self.selected = s.selected
            if "probe_summary" in changed:
                self.probe_summary = dict(s.probe_summary())
                self.probe_mode = s.mode
            for name, make in (("overview", s.overview), ("history", s.history), ("compile", s.compile_state), ("ranks_state", s.ranks_state), ("training", lambda: attach_view.attach_state(s))):  # fmt: skip
                if name in changed:
                    setattr(self, name, dict(make()))
            if "export_state" in changed:
                self.export_state = dict(s.export_state())
        if self._static is not None and changed & {"tree_state", "probe_summary"}:
            self._static.update(self._stand_in(), raw=True)  # a saved notebook shows the latest

    def _on_mode(self, change: dict[str, Any]) -> None:
        if self._session is not None:  # the Enum trait has refused any other mode
            self._session.mode = change["new"]

    def _live(self) -> Session:
        if self._session is None:
            raise RuntimeError("this Explorer was closed; call tx.explore(model) again")
        return self._session

    def close(self) -> None:
        """Drop every reference to the model (it can be garbage-collected) and close the view.

        A probe running in the background is stopped, and a watch started by `watch` is closed.
        """
        # getattr: ipywidgets calls close() from __del__, also on a half-built instance.
        session: Session | None = getattr(self, "_session", None)
        bg: background.Background | None = getattr(self, "_background", None)
        schedule: Schedule | None = getattr(self, "_schedule", None)
        if bg is not None and schedule is not None:
            schedule.close()  # a first probe still waiting for the view never starts
            if session is not None:
                session.cancel()  # nobody will see its result: stop at the next module call
            bg.wait()  # the probe still uses the model; it drops its result once closed
        link: training.TrainingLink | None = getattr(self, "_training", None)
        if link is not None:
            link.close(close_watch=True)
            self._training = None
        if session is not None:
            session.close()
            self._session = None
        super().close()


def explore(
    model: nn.Module,
    *example_args: Any,
    mode: str = "fake",
    probe: bool = True,
    **example_kwargs: Any,
) -> Explorer:
    """Open the Explorer on ``model``; example inputs (if given) drive the shape probe.

    ``mode="real"`` runs the probe on real tensors where the model lives (time and memory per
    module); the default "fake" needs no memory and runs no compute.

    ``probe=False`` skips the probe (``ex.run_probe()`` runs it later). In a Jupyter kernel or a
    marimo notebook this returns at once: the view is sent first and the model walked while the
    browser draws it (the tree follows), and the probe runs in the background, its results filling
    in when done (Apply and Undo wait for it; ``ex.wait()`` does too); elsewhere (a script), where
    nothing shows a view meanwhile, both run before this returns, except on a model of
    ``Explorer.probe_when_asked_from`` modules or more (10,000), which returns with its outline
    and probes when its results are first asked for (``ex.probe_report``, ``print(ex)``...;
    docs/guide/hosts-and-scale.md).

    ``ranks=plan`` (``tx.ranks``) fills the Ranks tab, ``attach=job`` (``tx.attach``) the Training
    tab (``explore(job)``: the job's own tree); either keyword of another value goes to the forward.

    ``mode`` and ``probe`` are taken by ``explore``: a model whose forward has a keyword argument
    of either name gets it through ``tx.probe(model, ..., **kwargs)`` instead.

    Args:
        model: The model to explore (a built `nn.Module`; edits change it in place).
        *example_args: Example positional inputs (``tx.explore(model, x)``).
        mode: ``"fake"`` or ``"real"``, the probe's mode.
        probe: False skips the first probe.
        **example_kwargs: Example keyword inputs (``tx.explore(model, **batch)``), and
            ``ranks=plan`` for the Ranks tab.

    Returns:
        The `Explorer` widget: the cell's value shows it.

    Raises:
        TypeError: `model` is not an `nn.Module`.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> from torchxray import demo
        >>> ex = tx.explore(demo.resnet_ish(), demo.images())
        >>> ex.probe_report.ok, len(ex.probe_report)
        (True, 35)
        >>> print(ex.summary(depth=0).splitlines()[0])
        ResNetIsh: 35 modules; probe ok (fake)
        >>> ex.close()
    """
    return Explorer(model, *example_args, mode=mode, probe=probe, **example_kwargs)
