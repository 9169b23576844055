"""Builds on the meta device for the form's gate and search: ``meta_build(cap, deadline)``.

Fast: weights are never initialised. An initialiser's in-place ops on a meta tensor (``uniform_``,
``normal_``, the ``erfinv_`` / ``clamp_`` of a truncated normal) change no shape and no dtype, yet
on meta they run torch's Python decompositions: two thirds of a ConvNeXt's meta build. A torch
function mode returns the tensor instead.

Bounded: the build raises ``TooBig`` from the first submodule registered past ``cap`` modules or
past ``deadline``. One candidate can make a constructor build without end (timm's DLA recurses
once per level: a width tried as ``levels`` builds millions of modules), and a deadline checked
between builds cannot stop it. torch's global module-registration hook sees every submodule as it is set; it is
there only while a build runs (reference-counted across threads; no global hook is left behind)
and counts only in the thread that runs the build. A constructor that loops in plain Python
registers nothing for seconds: ``_forms/watchdog.py`` stops it at the deadline (``PastDeadline``).
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch.nn.modules.module import register_module_module_registration_hook
from torch.overrides import TorchFunctionMode

from .watchdog import interrupt

__all__ = ["PastDeadline", "TooBig", "live_writes", "meta_build"]

# In-place ops that keep a tensor's shape and dtype: what initialisers run.
_VALUE_OPS = frozenset(
    "uniform_ normal_ trunc_normal_ erfinv_ fill_ zero_ clamp_ clamp_min_ clamp_max_ mul_ add_ "
    "sub_ div_ copy_ exponential_ bernoulli_ random_ log_normal_ cauchy_ geometric_ sqrt_ neg_ "
    "abs_ exp_ log_ pow_ tanh_ sigmoid_ addcmul_ addcdiv_ lerp_ masked_fill_ fmod_ remainder_ "
    "floor_ ceil_ round_ sign_ reciprocal_".split()
)


class _SkipInit(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        # torch.nn.init's functions dispatch as a whole (kaiming_uniform_ runs its uniform_
        # inside this handler, where the mode is off): they are skipped by name.
        init = name.endswith("_") and getattr(func, "__module__", "") == "torch.nn.init"
        kwargs = kwargs or {}
        # torch.nn.init passes its tensor by keyword (handle_torch_function(..., tensor=tensor)).
        target = args[0] if args else kwargs.get("tensor")
        if (name in _VALUE_OPS or init) and isinstance(target, torch.Tensor) and target.is_meta:
            return target
        written = getattr(_local, "written", None)
        if written is not None and isinstance(target, torch.Tensor) and not target.is_meta:
            # A live layer handed to the constructor, written in place (``w.mul_``,
            # ``nn.init.zeros_(w)``, ``w[0] = 0``): backed up first (`_trace.scope`).
            if (name.endswith("_") and not name.endswith("__")) or name in _WRITES:
                written(target)
        return func(*args, **kwargs)


_WRITES = frozenset({"__setitem__", "__set__", "__iadd__", "__isub__", "__imul__", "__itruediv__"})


@contextlib.contextmanager
def live_writes(before_write: Any) -> Iterator[None]:
    """Inside, in this thread: `before_write(tensor)` is called before a build writes a live
    (not meta) tensor in place, as a constructor may write a layer it is handed."""
    outer = getattr(_local, "written", None)
    _local.written = before_write
    try:
        yield
    finally:
        _local.written = outer


class TooBig(RuntimeError):
    """The build passed its module cap or its deadline."""


class PastDeadline(TooBig):
    """The build ran past its deadline (raised by the watchdog, with no arguments)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or ("the build ran past the search's deadline",)))


_local = threading.local()
_users = 0
_handle: Any = None
_lock = threading.Lock()


def _hook(module: Any, name: str, submodule: Any) -> None:
    state = getattr(_local, "state", None)
    if state is None:
        return
    state[0] += 1
    if state[0] > state[1]:
        raise TooBig(f"the build passed {state[1]} submodules")
    if state[0] % 16 == 0 and time.thread_time() > state[2]:
        raise PastDeadline()


@contextlib.contextmanager
def meta_build(cap: int = 1 << 30, deadline: float = float("inf")) -> Iterator[list[Any]]:
    """Build inside: on meta, uninitialised, bounded (see the module doc); warnings hidden. It
    yields its count (``[submodules registered, cap, deadline]``): a build that raises got as
    far as its count says."""
    global _users, _handle
    with _lock:
        if _users == 0:
            _handle = register_module_module_registration_hook(_hook)
        _users += 1
    outer = getattr(_local, "state", None)
    state: list[Any] = [0, cap, deadline]
    _local.state = state
    try:
        with warnings.catch_warnings(), torch.device("meta"), _SkipInit():
            warnings.simplefilter("ignore")
            with interrupt(deadline, PastDeadline):
                yield state
    finally:
        _local.state = outer
        with _lock:
            _users -= 1
            if _users == 0:
                _handle.remove()
                _handle = None
