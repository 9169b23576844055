"""Builds on the meta device for the form's gate and search: ``meta_build(cap, deadline, limit)``.

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
registers nothing for seconds: ``_forms/rebuild/watchdog.py`` stops it at the deadline (``PastDeadline``).

Counted: the build's work (``Count.work``: submodules, parameters and buffers registered, and
torch calls made) is what the search's budget spends (``_forms/budget.py``); it depends on the
candidate values only, never on the machine. A build past ``limit`` work raises ``OverBudget``,
at the registration or torch call that passes it (again at each later one, should the
constructor swallow it).
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn.modules.module import (
    register_module_buffer_registration_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from torch.overrides import TorchFunctionMode

from .watchdog import interrupt

__all__ = ["Count", "OverBudget", "PastDeadline", "TooBig", "live_writes", "meta_build"]

# In-place ops that keep a tensor's shape and dtype: what initialisers run.
_VALUE_OPS = frozenset(
    "uniform_ normal_ trunc_normal_ erfinv_ fill_ zero_ clamp_ clamp_min_ clamp_max_ mul_ add_ "
    "sub_ div_ copy_ exponential_ bernoulli_ random_ log_normal_ cauchy_ geometric_ sqrt_ neg_ "
    "abs_ exp_ log_ pow_ tanh_ sigmoid_ addcmul_ addcdiv_ lerp_ masked_fill_ fmod_ remainder_ "
    "floor_ ceil_ round_ sign_ reciprocal_".split()
)


@dataclass(slots=True)
class Count:
    """One build's count: ``modules`` registered (bounded by ``cap``), ``tensors`` (parameters
    and buffers) registered, torch ``calls`` made; ``work`` is their sum, bounded by ``limit``;
    ``deadline`` is the thread's CPU time past which the build is stopped."""

    cap: int
    limit: float
    deadline: float
    modules: int = 0
    tensors: int = 0
    calls: int = 0

    @property
    def work(self) -> int:
        return self.modules + self.tensors + self.calls


class _SkipInit(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        count = getattr(_local, "state", None)
        if count is not None:
            count.calls += 1
            if count.work > count.limit:
                raise OverBudget()
        name = getattr(func, "__name__", "")
        # torch.nn.init's functions dispatch as a whole (kaiming_uniform_ runs its uniform_
        # inside this handler, where the mode is off): they are skipped by name.
        init = name.endswith("_") and getattr(func, "__module__", "") == "torch.nn.init"
        kwargs = kwargs or {}
        # torch.nn.init passes its tensor by keyword (handle_torch_function(..., tensor=tensor)).
        target = args[0] if args else kwargs.get("tensor")
        if (name in _VALUE_OPS or init) and isinstance(target, torch.Tensor) and target.is_meta:
            return target
        out = kwargs.get("out")
        if type(out) is torch.Tensor and out.is_meta and _in_place(out, args, kwargs):
            # Values written into a tensor shaped as every input it is made from, elementwise:
            # on meta there is nothing to do. A power iteration at construction
            # (``spectral_norm``'s 15 per layer, each a normalize into ``out=`` that runs
            # torch's Python decompositions on meta) made a build 170x slower (bench/README.md).
            return out
        written = getattr(_local, "written", None)
        if written is not None and isinstance(target, torch.Tensor) and not target.is_meta:
            # A live layer handed to the constructor, written in place (``w.mul_``,
            # ``nn.init.zeros_(w)``, ``w[0] = 0``): backed up first (`_trace.scope`).
            if (name.endswith("_") and not name.endswith("__")) or name in _WRITES:
                written(target)
        return func(*args, **kwargs)


def _in_place(out: torch.Tensor, args: Any, kwargs: dict[str, Any]) -> bool:
    """Whether a call with ``out=`` only writes values into it: it holds values, and every
    tensor the call is given is a meta tensor of its shape and dtype (``normalize(u, out=u)``).
    A call whose inputs differ from ``out`` (a product, a factory, a cast) may size ``out`` or
    raise: it runs. (A reduction of a tensor shaped as ``out`` would be skipped; torch resizes a
    non-empty ``out`` only with a warning that it is deprecated.)"""
    given = (*args, *(v for k, v in kwargs.items() if k != "out"))
    tensors = [a for a in given if isinstance(a, torch.Tensor)]
    return (
        bool(out.numel())
        and bool(tensors)
        and all(t.is_meta and t.shape == out.shape and t.dtype == out.dtype for t in tensors)
    )


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
    """The build passed its module cap, its work limit or its deadline."""


class OverBudget(TooBig):
    """The build passed its work limit (the search's budget, ``_forms/budget.py``)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or ("the build passed the search's work budget",)))


class PastDeadline(TooBig):
    """The build ran past its deadline (raised by the watchdog, with no arguments)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or ("the build ran past the search's deadline",)))


_local = threading.local()
_users = 0
_handles: list[Any] = []
_lock = threading.Lock()


def _hook(module: Any, name: str, submodule: Any) -> None:
    count = getattr(_local, "state", None)
    if count is None:
        return
    count.modules += 1
    if count.modules > count.cap:
        raise TooBig(f"the build passed {count.cap} submodules")
    if count.work > count.limit:
        raise OverBudget()
    if count.modules % 16 == 0 and time.thread_time() > count.deadline:
        raise PastDeadline()


def _tensor_hook(module: Any, name: str, tensor: Any) -> None:
    count = getattr(_local, "state", None)
    if count is None or tensor is None:
        return
    count.tensors += 1
    if count.work > count.limit:
        raise OverBudget()


@contextlib.contextmanager
def meta_build(
    cap: int = 1 << 30,
    deadline: float = float("inf"),
    limit: float = float("inf"),
    real: bool = False,
) -> Iterator[Count]:
    """Build inside: on meta, uninitialised, bounded (see the module doc); warnings hidden. It
    yields its ``Count``: a build that raises got as far as its count says. ``real``: on the
    CPU instead, initialised, the random generator kept as found (``rebuild/real.py`` decides
    when: a small constructor that computes with tensor values), bounded and counted alike."""
    global _users
    with _lock:
        if _users == 0:
            _handles[:] = [
                register_module_module_registration_hook(_hook),
                register_module_parameter_registration_hook(_tensor_hook),
                register_module_buffer_registration_hook(_tensor_hook),
            ]
        _users += 1
    outer = getattr(_local, "state", None)
    state = Count(cap, limit, deadline)
    _local.state = state
    try:
        rng = torch.random.fork_rng(devices=[]) if real else contextlib.nullcontext()
        where = torch.device("cpu" if real else "meta")
        with warnings.catch_warnings(), rng, where, _SkipInit():
            warnings.simplefilter("ignore")
            with interrupt(deadline, PastDeadline):
                yield state
    finally:
        _local.state = outer
        with _lock:
            _users -= 1
            if _users == 0:
                for h in _handles:
                    h.remove()
                _handles.clear()
