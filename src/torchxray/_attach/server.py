"""The rank's worker server and torchxray's handler on it.

torch's c10d worker server (``torch._C._distributed_c10d._WorkerServer``) serves every handler
registered in the process (``_register_handler``) at ``POST /handler/<name>``. torchxray registers
one, ``torchxray``, which hands the request's body to the publisher that serves now (``serve``).
A job that already runs torch's debug server (``torch.distributed.debug.start_debug_server``)
keeps it: only the handler is added, on the server it has (``start``).

Three facts of this server shape the code (checked on torch 2.14):
- the handler must outlive the interpreter: the server's registry frees it after Python has
  finalized, which aborts the process ("PyThreadState_Get: ... the GIL is released") unless a
  reference of ours is still held then. A module's global is cleared during finalization too, so
  the handler (this module's function, registered once) gets one reference that is never given
  back (``_keep_forever``);
- handlers answer POST only (``GET /handler/`` lists the names): the token travels in the body;
- the server has no authentication of its own, and torch registers its own handlers on it (stack
  dumps, py-spy, ping): it listens on loopback unless ``host=`` says otherwise, with a warning;
- a request that reaches the handler while the interpreter finalizes aborts the process (the
  server's thread cannot take the GIL any more: "FATAL: exception not rethrown"), which would
  make a job that ended well exit with SIGABRT. So the server stops when the process ends
  (``_stop``, before Python finalizes), in a thread of its own: ``shutdown`` keeps the GIL while
  it waits for a request in flight, whose handler needs it. Stopping a server within ~0.5 s of
  its start can wait forever (torch 2.14): the stop waits that long after the start first.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from .wire import KEY

__all__ = ["LOOPBACK", "Answer", "Bound", "serve", "start"]

LOOPBACK = "127.0.0.1"
Answer = Callable[[str], tuple[int, str]]  # request body -> (HTTP status, JSON text)

_lock = threading.Lock()
_server: Any = None  # the _WorkerServer torchxray started (None: none, or torch's debug server)
_bound: Bound | None = None
_answer: Answer | None = None  # the publisher that serves now
_registered = False
_started = 0.0  # when the server torchxray answers on was taken (time.monotonic())
_stopping = False
SETTLE = 0.5  # seconds after its start before a worker server may be stopped (see above)


class Bound:
    """Where the rank's worker server listens, and the address a client should use."""

    def __init__(self, host: str, port: int, reachable: str, ours: bool) -> None:
        self.host, self.port, self.reachable, self.ours = host, port, reachable, ours

    def __repr__(self) -> str:
        return f"Bound({self.host}:{self.port}, clients use {self.reachable})"


def _handle(req: Any, resp: Any) -> None:
    """torchxray's handler (this function, held by the module: see above)."""
    answer = _answer
    try:
        status, text = (404, "") if answer is None else answer(req.body())
    except Exception:  # noqa: BLE001 - the server thread must answer, never raise into C++
        status, text = 500, ""
    resp.set_status(status)
    resp.set_content(text, "application/json")


def _keep_forever(obj: object) -> None:
    import ctypes

    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _stop() -> None:
    """Stop the server torchxray's handler is on, at the process's end (see the module's docs)."""
    global _answer, _stopping
    _answer = None
    target = _server if _server is not None else _debug_server()
    if target is None or _stopping:
        return
    _stopping = True
    wait = SETTLE - (time.monotonic() - _started)
    if wait > 0:
        time.sleep(wait)
    t = threading.Thread(target=target.shutdown, name="torchxray-stop", daemon=True)
    t.start()
    t.join(timeout=5.0)


def _at_exit() -> None:
    # threading's own exit hook runs before Python finalizes and may still start a thread (the
    # hook concurrent.futures uses); atexit where it is missing.
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        register(_stop)
    else:  # pragma: no cover - every CPython from 3.9 has it
        import atexit

        atexit.register(_stop)


def serve(answer: Answer | None) -> None:
    """Make ``answer`` the one that serves torchxray's requests (None: nobody, 404)."""
    global _answer
    _answer = answer


def _debug_server() -> Any:
    debug = sys.modules.get("torch.distributed.debug")  # not imported here: only if the job did
    return getattr(debug, "_WORKER_SERVER", None)


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1")


def _reachable(host: str) -> str:
    """The name a client on another machine reaches a server bound to ``host`` by."""
    if _loopback(host):
        return LOOPBACK
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming the wildcard, not binding it
        return socket.gethostname()
    return host


def start(host: str | None) -> Bound:
    """Register the handler and make sure a worker server listens (once per process)."""
    global _server, _bound, _registered, _started
    from torch._C._distributed_c10d import _register_handler, _WorkerServer

    with _lock:
        if not _registered:
            _keep_forever(_handle)
            _register_handler(KEY, _handle)
            _at_exit()
            _registered = True
        debug = _debug_server()
        if debug is not None:
            # torch's debug server binds every interface (``::``) itself: our handler joins it.
            _bound = Bound("::", int(debug.port), _reachable(host or "::"), ours=False)
            _started = _started or time.monotonic()
            if host is not None and _loopback(host):
                warnings.warn(
                    "torchxray.watch(publish=True): this job runs torch's debug server, which "
                    f"listens on every interface (port {debug.port}); torchxray's handler is added "
                    "to it and asks for the job's token, but cannot make it loopback-only",
                    stacklevel=4,
                )
            return _bound
        want = host or LOOPBACK
        if _bound is not None and _bound.ours:
            if _bound.host != want:
                raise RuntimeError(
                    f"this process's worker server listens on {_bound.host} already; "
                    f"publish with the same host= (or none) instead of {want!r}"
                )
            return _bound
        _server = _WorkerServer(want, 0)
        _started = time.monotonic()
        _bound = Bound(want, int(_server.port), _reachable(want), ours=True)
        if not _loopback(want):
            warnings.warn(
                f"torchxray.watch(publish=True, host={want!r}): this rank's worker server listens "
                f"on {want}:{_bound.port}, reachable from other machines. torchxray's handler "
                "answers only requests with the job's token, but torch's own handlers on that "
                "server (stack dumps, py-spy) answer anyone: open it only on a network you trust",
                stacklevel=4,
            )
        return _bound
