"""When the Explorer sends its states and runs its probes: one state object, every transition a
method here, so that the order of display, walk and probe is decided in one place.

The deferred states (``DEFERRED``: the tree and the Overview, which need the model's walk). In a
kernel the view goes out before the walk, so that the browser draws it while the kernel reads the
model. They move through three phases:

    HELD     ``Explorer.__init__`` runs: a sync leaves them out                  -> ``built()``
    WAITING  the next sync (``_ipython_display_``, a request, ``ex.wait()``) adds them
    SENT     they went out (``sent()``); a failed push puts them back (``unsent()``)

The same in a marimo notebook, where the deferred states go with the view's first request. Where
nothing shows a view before ``tx.explore`` returns (a script), or with ``Explorer.tree_after_view =
False``, an Explorer starts SENT.

The first probe waits until the deferred states went out and the view drew (its first request),
at most ``first_probe_delay`` seconds for each, so that it does not compete with the display for
the interpreter; a wait for the report (``release()``) or ``close()`` ends that wait.

While the widget answers a slow request in a kernel (``answering(True)``), a probe the request asks
for is left ``pending`` for the widget to start in a background thread (``ask()`` /
``take_pending()``); the probe that runs holds a ``Cancel`` token here (``running()``), which
``cancel()`` sets from any thread.

    >>> s = Schedule(defer_view=True)
    >>> sorted(s.outgoing(frozenset({"tree_state", "history"}))[0])   # HELD: the tree waits
    ['history']
    >>> s.built(); sorted(s.outgoing(frozenset({"history"}))[0]), s.phase
    (['history', 'overview', 'tree_state'], 'SENT')
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .._probe.cancel import Cancel
from .host import DEFERRED, States

__all__ = ["HELD", "SENT", "WAITING", "Schedule"]

HELD, WAITING, SENT = "HELD", "WAITING", "SENT"


class Schedule:
    """The Explorer's display and probe timing (see the module's docstring)."""

    def __init__(self, defer_view: bool = False, first_probe_delay: float = 1.0) -> None:
        self.phase = HELD if defer_view else SENT
        self.first_probe_delay = first_probe_delay
        self._sent = threading.Event()  # the deferred states went out: the first probe may start
        if not defer_view:
            self._sent.set()
        self._view_drew = threading.Event()
        self.closing = False
        self.background = False  # a probe asked for now is left pending for a background thread
        self.pending = False
        self._token: Cancel | None = None

    # -- the deferred states -------------------------------------------------------------------

    def defer_view(self) -> None:
        """HELD from now on (the Explorer learns whether its host shows the view before the walk
        only once its comm is open; nothing has been synced yet)."""
        self.phase = HELD
        self._sent.clear()

    @property
    def waiting(self) -> bool:
        """Whether the deferred states have not gone out yet (the view shows without them)."""
        return self.phase != SENT

    def built(self) -> None:
        """``Explorer.__init__`` ended: the next sync sends the deferred states."""
        if self.phase == HELD:
            self.phase = WAITING

    def outgoing(self, changed: States) -> tuple[States, bool]:
        """The states a sync pushes now, and whether they carry the deferred ones for the first
        time (the caller then calls ``sent()`` after the push, or ``unsent()`` if it failed)."""
        if self.phase == HELD:
            return changed - DEFERRED, False
        if self.phase == WAITING:
            # SENT at once: a sync nested in this push must not send them a second time.
            self.phase = SENT
            return changed | DEFERRED, True
        return changed, False

    def sent(self) -> None:
        self._sent.set()

    def unsent(self) -> None:
        """The push that carried the deferred states failed (e.g. the kernel interrupted the
        walk): the next sync or request sends them again."""
        self.phase = WAITING

    # -- the view and the first probe ----------------------------------------------------------

    def view_drew(self) -> None:
        """The view's first request came: it has drawn."""
        self._view_drew.set()

    def first_probe_may_start(self) -> bool:
        """Wait (in the probe's thread) for the deferred states and the view, each at most
        ``first_probe_delay`` seconds; False when the Explorer was closed meanwhile."""
        self._sent.wait(self.first_probe_delay)
        self._view_drew.wait(self.first_probe_delay)
        return not self.closing

    def release(self) -> None:
        """Something needs the report now (``ex.wait()``, a slow request): the first probe waits
        no longer."""
        self._view_drew.set()
        self._sent.set()

    def close(self) -> None:
        """A first probe still waiting for the view never starts."""
        self.closing = True
        self._view_drew.set()

    # -- probes --------------------------------------------------------------------------------

    @contextmanager
    def answering(self, background: bool) -> Iterator[None]:
        """While a request is answered: with ``background``, a probe it asks for is left
        pending (the widget starts it in a thread, where Cancel can stop it)."""
        self.background = background
        try:
            yield
        finally:
            self.background = False

    def ask(self) -> bool:
        """A probe is asked for: True when it is left pending for the background."""
        if self.background:
            self.pending = True
        return self.background

    def take_pending(self) -> bool:
        """Whether a probe is pending; it is no longer (the caller starts it)."""
        pending, self.pending = self.pending, False
        return pending

    @contextmanager
    def running(self) -> Iterator[Cancel]:
        """The token of the probe that runs inside: ``cancel()`` sets it."""
        self._token = token = Cancel()
        try:
            yield token
        finally:
            self._token = None

    def cancel(self) -> bool:
        """Stop the running probe at its next module call; False when none is running."""
        token = self._token
        if token is not None:
            token.set()
        return token is not None
