"""A build stopped when its thread's CPU time passes a deadline, wherever it is (``interrupt``).

A constructor can spend seconds in plain Python without registering a submodule (a table of
positions computed number by number, a loop over every pair of a grid's points): the
registration hook of ``_forms/rebuild/meta.py`` never sees it. One watchdog thread reads each armed
thread's CPU clock and, past its deadline, raises the error in it (CPython's
``PyThreadState_SetAsyncExc``: at the thread's next bytecode boundary, never inside C code).

It fires only while it holds the lock that arming and disarming take (a C lock: no Python code
runs under it in the armed thread, so the error cannot land there), and again every
``REFIRE_SECONDS`` of the thread's CPU time while the build runs on: a constructor's own ``except
Exception`` (a fallback tried when a layer fails) can swallow one error, not the deadline.
Disarming lets an error fired but not landed yet land in its own loop: none reaches the code
that runs after the build. An error that lands while the build unwinds can leave torch's global modes
as the interrupted code had them: grad mode and the default dtype are put back. Where a thread's CPU clock cannot be read from another thread (no
``pthread_getcpuclockid``), the deadline is measured on the wall clock from the arming, which is
never later. It never fires inside an import: that would leave a half-made module for good.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

__all__ = ["interrupt"]

POLL_SECONDS = 0.01  # how late past its deadline a build may be stopped, at most (plus a bytecode)
REFIRE_SECONDS = 0.01  # CPU time a build that swallowed the error may run before the next one


@dataclass
class _Armed:
    clock: int | None  # the thread's CPU clock id; None: wall time
    deadline: float  # on that clock
    error: type[BaseException]
    fired: float | None = None  # on that clock, when the error was last raised
    gone: bool = False  # the thread ended without disarming


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
                if a.gone:
                    continue
                try:
                    now = _now(a)
                except OSError:  # the thread ended without disarming: nothing to stop
                    a.gone = True
                    continue
                due = a.deadline if a.fired is None else a.fired + REFIRE_SECONDS
                if now >= due and _importing(tid):
                    # An error landing inside an import leaves a half-made module in
                    # sys.modules for good (a build that first imported torch._dynamo broke
                    # every later torch.compile): fired once the import is done.
                    due = now + POLL_SECONDS
                elif now >= due:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(tid), ctypes.py_object(a.error)
                    )
                    a.fired, due = now, now + REFIRE_SECONDS
                # CPU time runs no faster than the wall clock: no need to look sooner.
                left = min(POLL_SECONDS, due - now, left or POLL_SECONDS)
        _wake.wait(left)
        _wake.clear()


def _importing(tid: int) -> bool:
    """Whether thread `tid` is inside an import (importlib's frames on its stack)."""
    frame = sys._current_frames().get(tid)
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _clock() -> int | None:
    try:
        return time.pthread_getcpuclockid(threading.get_ident())
    except (AttributeError, OSError):
        return None


class _Spent(BaseException):
    """Stands in for a fired error that has not landed: it lands in ``_disarm``'s own loop."""


def _disarm(tid: int, error: type[BaseException]) -> None:
    """The arming removed under the lock (no firing after it); an error fired but not landed yet
    is replaced by ``_Spent`` and let land here. (Clearing it instead leaves CPython 3.11's
    pending-exception flag set, and a profiled thread then loops at its next call.)"""
    while True:
        try:
            with _lock:
                a = _armed.pop(tid, None)
                if a is not None and a.fired is not None:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(tid), ctypes.py_object(_Spent)
                    )
                    for _ in range(1 << 30):
                        pass
            return
        except error:  # fired before the arming was removed, landed before the replacement
            pass
        except _Spent:
            return


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
    try:
        with _lock:  # the watchdog cannot fire before this thread is past here
            _armed[tid] = _Armed(clock, at, error)
            if _thread is None:
                _thread = threading.Thread(target=_watch, name="torchxray-watchdog", daemon=True)
                _thread.start()
            _wake.set()
        yield
    finally:
        while True:
            try:
                _disarm(tid, error)
                break
            except error:  # landed as the call began
                pass
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
