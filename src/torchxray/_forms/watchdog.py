"""A build stopped when its thread's CPU time passes a deadline, wherever it is (``interrupt``).

A constructor can spend seconds in plain Python without registering a submodule (a table of
positions computed number by number, a loop over every pair of a grid's points): the
registration hook of ``_forms/metabuild.py`` never sees it. One watchdog thread reads each armed
thread's CPU clock and, past its deadline, raises the error in it (CPython's
``PyThreadState_SetAsyncExc``: at the thread's next bytecode boundary, never inside C code).

It fires once per arming at most, and only while it holds the lock that arming and disarming
take (a C lock: no Python code runs under it in the armed thread, so the error cannot land there).
An error fired after the build finished is let land at once, in a loop of our own, and dropped:
it never reaches the code that runs after the build. An error that lands while the build unwinds
can leave torch's global modes as the interrupted code had them: grad mode and the default dtype
are put back. Where a thread's CPU clock cannot be read from another thread (no
``pthread_getcpuclockid``), the deadline is measured on the wall clock from the arming, which is
never later.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

__all__ = ["interrupt"]

POLL_SECONDS = 0.01  # how late past its deadline a build may be stopped, at most (plus a bytecode)


@dataclass
class _Armed:
    clock: int | None  # the thread's CPU clock id; None: wall time
    deadline: float  # on that clock
    error: type[BaseException]
    fired: bool = False


_armed: dict[int, _Armed] = {}
_lock = threading.Lock()
_wake = threading.Event()
_thread: threading.Thread | None = None


def _now(a: _Armed) -> float:
    return time.clock_gettime(a.clock) if a.clock is not None else time.monotonic()


def _watch() -> None:
    while True:
        left: float | None = None
        with _lock:
            for tid, a in _armed.items():
                if a.fired:
                    continue
                try:
                    now = _now(a)
                except OSError:  # the thread ended without disarming: nothing to stop
                    a.fired = True
                    continue
                if now >= a.deadline:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(tid), ctypes.py_object(a.error)
                    )
                    a.fired = True
                else:
                    # CPU time runs no faster than the wall clock: no need to look sooner.
                    left = min(POLL_SECONDS, a.deadline - now, left or POLL_SECONDS)
        _wake.wait(left)
        _wake.clear()


def _clock() -> int | None:
    try:
        return time.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None


def _disarm(tid: int, error: type[BaseException]) -> tuple[bool, bool]:
    """(fired, landed here): the arming removed; a fired error that lands meanwhile is caught
    (it fired, then: once, so the next try goes through)."""
    landed = False
    while True:
        try:
            with _lock:
                a = _armed.pop(tid, None)
            return landed or (a is not None and a.fired), landed
        except error:
            landed = True


@contextlib.contextmanager
def interrupt(deadline: float, error: type[BaseException]) -> Iterator[None]:
    """Inside: ``error`` (a class taking no arguments) is raised in this thread once its CPU time
    (``time.thread_time()``) passes ``deadline`` (see the module doc). An infinite deadline, or a
    thread already armed, arms nothing."""
    global _thread
    tid = threading.get_ident()
    if deadline == float("inf") or not hasattr(ctypes, "pythonapi") or tid in _armed:
        yield
        return
    clock = _clock()
    grad, dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    left = deadline - time.thread_time()
    at = (time.clock_gettime(clock) if clock is not None else time.monotonic()) + left
    landed = False
    try:
        with _lock:  # the watchdog cannot fire before this thread is past here
            _armed[tid] = _Armed(clock, at, error)
            if _thread is None:
                _thread = threading.Thread(target=_watch, name="torchxray-watchdog", daemon=True)
                _thread.start()
            _wake.set()
        yield
    except error:
        landed = True
        raise
    finally:
        fired = caught = False
        while True:
            try:
                fired, caught = _disarm(tid, error)
                break
            except error:  # landed as the call began
                landed = True
        if fired and not (landed or caught):
            # Fired as the build ended: pending here, it lands at the loop's first jump back.
            with contextlib.suppress(error):
                for _ in range(1 << 30):
                    pass
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
