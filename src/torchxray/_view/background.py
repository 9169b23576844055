"""The Explorer's probes, run off the kernel's main thread, so that the view is usable at once.

In a kernel, ``tx.explore(model, x)`` returns with the tree walked and shown, and the probe runs in
a daemon thread: the kernel keeps answering the view (selection, Source, Form, MRO) meanwhile, and
the report is installed and synced when it is done. Why a thread and not a callback on the
kernel's event loop: a callback would run the probe on the main thread and the view's requests
would queue behind it for the whole probe.

Why this is safe: ``FakeTensorMode``, ``no_grad`` and the dispatch-mode stack are thread-local,
so the probe's modes do not leak into the user's cells; the probe's own patches take
``_probe.wrap``'s lock, so two probes never interleave; whatever changes the model (Apply, Undo,
a Python ``ex.edit``) first waits for the probe (``wait``).

marimo runs no Jupyter kernel, but its notebooks show a widget the same way: the cell returns, the
view draws, and state sent later reaches it, from any thread (marimo binds each widget's comm to
its session when the comm opens). There too the probe runs in the background (``later``).
Elsewhere (plain Python, scripts, tests, IPython in a terminal, marimo run as a script, Pyodide,
which has no threads) nothing shows a view before ``tx.explore`` returns, so the probe runs
synchronously and ``tx.explore`` returns a probed Explorer; a model of
``Explorer.probe_when_asked_from`` modules or more is probed when first asked for instead
(``widget.py``; why not in a thread there: docs/guide/hosts-and-scale.md).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PROBING", "WHEN_ASKED", "Background", "in_kernel", "later"]

PROBING = "probing… (the tree is usable; shapes fill in when the probe is done)"
# Outside a kernel, a big model's first probe (Explorer.probe_when_asked_from).
WHEN_ASKED = (
    "probe not run yet: it runs when first asked for (ex.probe_report, ex.wait(), print(ex), "
    "a save, the view's first request)"
)


def in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (where the view can show before the probe ends)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def in_terminal() -> bool:
    """Whether this runs in IPython's terminal shell (by class name: no prompt_toolkit import),
    which draws no widget."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    return any(c.__name__ == "TerminalInteractiveShell" for c in type(shell).__mro__)


def later(widget: Any) -> bool:
    """Whether `widget`'s view shows while its probe runs and takes the results when they come:
    in a Jupyter kernel, or in a marimo notebook whose widget comms send from any thread; never
    under Pyodide (JupyterLite's kernel, marimo in the browser), which starts no threads."""
    if sys.platform == "emscripten":
        return False
    return in_kernel() or _in_marimo_notebook(widget)


def _in_marimo_notebook(widget: Any) -> bool:
    marimo = sys.modules.get("marimo")  # never imported: not in marimo (and no import here)
    if marimo is None or sys.platform == "emscripten":  # Pyodide starts no threads
        return False
    try:
        if not marimo.running_in_notebook():  # `marimo edit` / `marimo run`, not a script
            return False
    except Exception:  # noqa: BLE001 - a marimo without it, or a broken one: run synchronously
        return False
    # A marimo comm sends through the session it was opened in, bound when it opens ("library-
    # owned callbacks may send from a plain background thread", marimo's comm.py). A marimo
    # without that binding sends only from the cell's own thread: the probe then runs before
    # `tx.explore` returns, as it did. A private attribute, read only to choose the safe path.
    return getattr(getattr(widget, "comm", None), "_stream", None) is not None


class Background:
    """One job at a time in a daemon thread; ``wait`` joins it (from any thread but its own)."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        t = self._thread
        return t is not None and t.is_alive()

    def start(self, job: Callable[[], None], name: str = "torchxray-probe") -> None:
        if self.running:
            raise RuntimeError("a background probe is already running; call wait() first")
        # Daemon: a kernel shutting down does not wait for a probe nobody will see.
        self._thread = threading.Thread(target=job, name=name, daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the running job; True when none is running any more."""
        t = self._thread
        if t is None or t is threading.current_thread():
            return True
        t.join(timeout)
        if t.is_alive():
            return False
        self._thread = None
        return True
