"""Cancelling a running probe from another thread: the widget's Cancel button.

The Explorer runs its probes in a background thread inside a kernel (`_view/background.py`); the
kernel's main thread, still answering the view, sets the probe's `Cancel` token. The recorder
(`_probe.calls`) reads the token at every module call and raises `ProbeCancelled` there, so a probe
stops at the next module boundary (one long op, such as a huge convolution, finishes first). The
exception leaves the probe as KeyboardInterrupt does: through every ``finally`` of `ProbeRun`,
which puts back forwards, train/eval flags and modes and frees GPU memory; nothing of it is left.

Why a ``BaseException``: a forward's own ``except Exception`` (transformers and timm have some)
must not swallow it, and the probe's failure report (`_probe.failure`) must not turn it into "this
layer failed". Why a thread-local scope rather than an argument: ``tx.probe``'s keyword arguments
go to the model's forward, so a new keyword would take a name from every model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Cancel", "ProbeCancelled", "check", "current", "scope"]


class ProbeCancelled(BaseException):  # noqa: N818 - named as KeyboardInterrupt is
    """A probe stopped because its `Cancel` token was set."""


class Cancel:
    """A token a probe checks at every module call; `set` from any thread."""

    __slots__ = ("is_set", "where")

    def __init__(self) -> None:
        self.is_set = False  # a plain flag: read once per module call, on the probe's hot path
        self.where = ""  # the module the probe stopped at, once it has

    def set(self) -> None:
        self.is_set = True


_local = threading.local()


def current() -> Cancel | None:
    """The token of the probe about to run in this thread (None outside `scope`)."""
    return getattr(_local, "token", None)


def check(stage: str) -> None:
    """Raise `ProbeCancelled` if this thread's token is set: the setup of a probe of 100,000
    modules takes seconds before the first module call, where the recorder would first look."""
    token = current()
    if token is not None and token.is_set:
        token.where = ""
        raise ProbeCancelled(f"probe cancelled while {stage}")


@contextmanager
def scope(token: Cancel) -> Iterator[Cancel]:
    """Probes run in this thread inside the block stop when ``token`` is set."""
    before = current()
    _local.token = token
    try:
        yield token
    finally:
        _local.token = before
