"""The view's requests answered while a training cell runs: ``Pump``.

While a cell runs, the kernel's main thread is in the user's loop and reads no message: a click
in the widget (Pause, a selection, an edit) would wait for the cell to end. ipykernel (7.4 and
later) routes each comm message in its shell channel thread, asking the comm where to send it
(``Comm._reply_subshell_for``); the pump wraps that method on the Explorer's comm, keeps a copy of
each of the widget's requests there, and answers them from the loop's thread at the next step's
end (``drain``, which the watch calls between steps, and every 50 ms while paused). The message
itself still travels its usual way and reaches the widget once the cell ends; ``claimed`` says
to drop it then when the pump answered it already, so that no request runs twice. Elsewhere
(another kernel, no kernel) ``install`` returns False and the requests wait for the cell, as any
widget's do; the Training tab says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Pump"]

Answer = Callable[[Any], None]  # answers one anywidget command message (the whole envelope)


def _command(data: Any) -> dict[str, Any] | None:
    content = data.get("content") if isinstance(data, dict) else None
    if (
        isinstance(content, dict)
        and content.get("kind") == "anywidget-command"
        and content.get("name") == "rpc"
        and isinstance(content.get("id"), str)
    ):
        return content
    return None


class Pump:
    """Requests copied in the kernel's shell channel thread, answered between training steps."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._lock = threading.Lock()
        self._queue: dict[str, dict[str, Any]] = {}  # id -> command, in arrival order
        self._answered: set[str] = set()
        self._comm: Any = None

    def install(self, comm: Any) -> bool:
        """Watch ``comm``'s incoming messages; False where the kernel offers no such hook."""
        route = getattr(comm, "_reply_subshell_for", None)
        if route is None or not callable(route) or self._comm is not None:
            return self._comm is not None

        def copying(data: Any, default: Any) -> Any:
            cmd = _command(data)
            if cmd is not None:
                with self._lock:
                    self._queue.setdefault(cmd["id"], cmd)
            return route(data, default)

        comm._reply_subshell_for = copying
        self._comm = comm
        return True

    def uninstall(self) -> None:
        comm, self._comm = self._comm, None
        if comm is not None and "_reply_subshell_for" in vars(comm):
            del comm._reply_subshell_for  # the class's own method again
        with self._lock:
            self._queue.clear()

    @property
    def installed(self) -> bool:
        return self._comm is not None

    def drain(self) -> int:
        """Answer the requests copied so far (in the thread that calls this); returns how many."""
        done = 0
        while True:
            with self._lock:
                if not self._queue:
                    return done
                mid = next(iter(self._queue))
                cmd = self._queue.pop(mid)
                self._answered.add(mid)
            self._answer(cmd)
            done += 1

    def claimed(self, content: Any) -> bool:
        """For a message arriving the usual way: True when the pump answered it (drop it); else
        it is no longer the pump's to answer."""
        cmd = _command({"content": content})
        if cmd is None:
            return False
        with self._lock:
            if cmd["id"] in self._answered:
                self._answered.discard(cmd["id"])
                return True
            self._queue.pop(cmd["id"], None)
            return False
