"""The Explorer's side of a training lens (``ex.watch``): the watch on the explored model, the
``training`` state sent while the loop runs (at most every ``PUSH_EVERY`` seconds, and at once
when the loop pauses, resumes or first meets a NaN), and the view's requests answered between
steps (``_view/train_pump.py``). Edits made meanwhile go through ``Watch.patched`` (the session
does it), so the optimizer keeps holding the model's weights; the probe waits for the loop.
When a watch on the model opens or closes (``ex.watch``'s or ``tx.watch``'s), the tree is read
again (its rows' hook badges), and a closed ``ex.watch`` is shown closed, its history kept.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from torch import nn

from .._watch.hooks import on_detach
from ..watch import Watch
from .host import DEFERRED
from .session import Session
from .tools_watch import training_state
from .train_pump import Pump
from .watch_types import TrainingState

__all__ = ["PUSH_EVERY", "TrainingLink", "follow_watches", "open_watch"]

PUSH_EVERY = 0.5  # seconds between two training states sent while the loop runs
UNPAUSABLE = (
    "this kernel answers the view only between cells: Pause and edits wait for the loop's cell "
    "to end (ipykernel 7.4 or later answers them between steps)"
)


class TrainingLink:
    """One watch shown by one Explorer."""

    def __init__(self, explorer: Any, session: Session, watch: Watch) -> None:
        self.explorer, self.session, self.watch = explorer, session, watch
        self.pump = Pump(self._answer)
        comm = getattr(explorer, "comm", None)
        self.pausable = comm is not None and self.pump.install(comm)
        self._last = 0.0
        self._shown: tuple[bool, bool] = (False, False)
        self._remove = watch.on_step(self._between_steps)
        session.watch = watch
        # The loop's last steps since the last (throttled) state: sent once its cell ends.
        self._shell = _shell()
        if self._shell is not None:
            self._shell.events.register("post_run_cell", self._after_cell)
        self.push()

    def _after_cell(self, *_: Any) -> None:
        if self.watch.steps != self.explorer.training.get("step"):
            self.push()

    def state(self) -> TrainingState:
        return training_state(self.watch, self.pausable, "" if self.pausable else UNPAUSABLE)

    def push(self) -> None:
        self._last = time.monotonic()
        w = self.watch
        self._shown = (w.paused, w.nonfinite is not None)
        self.explorer.training = dict(self.state())

    def _between_steps(self, w: Watch) -> None:
        self.session.training_now = True
        try:
            self.pump.drain()
        finally:
            self.session.training_now = False
        now = (w.paused, w.nonfinite is not None)
        if now != self._shown or time.monotonic() - self._last >= PUSH_EVERY:
            self.push()

    def _answer(self, cmd: dict[str, Any]) -> None:
        reply, buffers = self.explorer.rpc(cmd["msg"], [])
        self.explorer.send(
            {"id": cmd["id"], "kind": "anywidget-command-response", "response": reply}, buffers
        )

    def claimed(self, content: Any) -> bool:
        return self.pump.claimed(content)

    def ended(self) -> None:
        """The watch was closed (``w.close()``): shown closed; its history stays readable."""
        self.push()
        self.close(close_watch=False)
        self.session.watch = self.watch  # closed: the Training tab still reads its history

    def close(self, close_watch: bool) -> None:
        self._remove()
        if self._shell is not None:
            try:
                self._shell.events.unregister("post_run_cell", self._after_cell)
            except ValueError:  # not registered (any more)
                pass
            self._shell = None
        self.pump.uninstall()
        if self.session.watch is self.watch:
            self.session.watch = None
        if close_watch:
            self.watch.close()


def _shell() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    return get_ipython()


def _in(model: nn.Module, other: nn.Module) -> bool:
    return any(m is model for m in other.modules())


def _hooks_changed(explorer: Any, model: nn.Module) -> None:
    """A watch took its hooks off ``model``: if the explorer shows it (or a part of it), its
    tree is read again and a closed ``ex.watch`` shown closed."""
    if threading.current_thread() is not threading.main_thread():
        return  # a watch collected in another thread: not while that thread may hold the view
    session: Session | None = getattr(explorer, "_session", None)
    live = None if session is None else session.model
    if session is None or live is None or not (_in(model, live) or _in(live, model)):
        return
    link = explorer._training
    if link is not None and link.watch.closed:
        explorer._training = None
        link.ended()
    if session.reread():
        explorer._sync(DEFERRED)


def follow_watches(explorer: Any) -> None:
    """Read the explorer's tree again whenever a watch's hooks come off its model."""
    on_detach(explorer, _hooks_changed)


def open_watch(explorer: Any, session: Session, optimizer: Any, every: int, **kwargs: Any) -> Watch:
    """A watch on the session's model, linked to ``explorer`` (``Explorer.watch``)."""
    explorer._join()  # a background probe runs the model's modules: done before training
    old = explorer._training
    if old is not None:
        old.close(close_watch=True)
        explorer._training = None
    w = Watch(session.live_model(), optimizer, every, **kwargs)
    session.job = None  # a loop in this kernel takes the Training tab from an attached job
    try:
        explorer._training = TrainingLink(explorer, session, w)
    except BaseException:
        w.close()
        raise
    if session.reread():  # the rows show the watch's hooks
        explorer._sync(DEFERRED)
    return w
