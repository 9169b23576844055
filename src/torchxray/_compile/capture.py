"""Each module's first call, as values: what the per-module traces are given (`capture`).

The probe (`torchxray.probe`, fake or real) runs the forward once and leaves the model as found;
its records keep metadata only, and a call's non-tensor arguments (``mask=None``,
``use_cache=False``, a cache object) would not be rebuilt from them. So, for the probe's
duration, two global module hooks keep each module's first call: a forward pre-hook its
arguments (the keyword arguments from the frame of ``nn.Module._call_impl``, which hands a global
pre-hook the positional ones only), a forward hook its output. Global hooks make the probe call
every module the usual way (`_probe.wrap`), so both run for every call; both are removed when the
probe returns, before the probe's own check of what the forward left behind ends.

In a fake probe the values are the probe's fake tensors: nothing is computed or allocated. In a
real probe each plain tensor is kept as a fake tensor of its metadata (`_fake.mode.new_fake`),
made when the hook sees it: tracing reads metadata only, and keeping every module's real inputs
and outputs would hold a whole forward's activations (gigabytes for a large model on a GPU). A
module whose forward raised (a data-dependent op on fake tensors) has its arguments and no
output; modules after it have neither.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree

from .._fake.mode import new_fake
from ..probe import ProbeReport, run_probe

__all__ = ["Captured", "Capture", "capture"]

MISSING: Any = object()


@dataclass
class Captured:
    """One module's first call: its arguments and output (`MISSING` until it returned).
    `varied`: a later call returned another shape (a ReLU shared by layers of several widths),
    so its first output cannot stand in for every call (`stubbable`)."""

    order: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any = MISSING
    shape: Any = None
    varied: bool = False

    @property
    def stubbable(self) -> bool:
        return self.output is not MISSING and not self.varied


@dataclass
class Capture:
    """The probe's report and every called module's first call, by module id."""

    report: ProbeReport
    calls: dict[int, Captured] = field(default_factory=dict)


def _shape_of(value: Any) -> Any:
    """What of an output a stand-in must match: its structure and each tensor's metadata."""
    try:
        leaves, spec = pytree.tree_flatten(value)
        return spec, tuple(
            (tuple(v.shape), tuple(v.stride()), v.dtype, v.device)
            if isinstance(v, torch.Tensor)
            else type(v)
            for v in leaves
        )
    except Exception:  # noqa: BLE001 - unreadable: never equal, so never stood in for
        return object()


def _as_is(value: Any) -> Any:
    return value


_FAKES: list[Any] = []  # one fake mode for the real checks' metadata, made on first use


def _faked(value: Any) -> Any:
    """`value` with every plain tensor replaced by a fake tensor of its metadata (subclasses,
    parameters and anything else stay as they are)."""
    if not _FAKES:
        _FAKES.append(FakeTensorMode())
    mode = _FAKES[0]

    def fake(t: torch.Tensor) -> Any:
        if type(t) is not torch.Tensor:
            return t
        return new_fake(mode, t.shape, t.stride(), t.dtype, t.device)

    try:
        return pytree.tree_map_only(torch.Tensor, fake, value)
    except Exception:  # noqa: BLE001 - a structure pytree cannot rebuild: kept as it is
        return value


def _kwargs_of_caller() -> dict[str, Any] | None:
    # The pre-hook's caller is `_call_impl`'s inner function, which holds the call's keyword
    # arguments as `kwargs` (torch keeps that code shape: torchrec checks it).
    frame = sys._getframe(2)
    kwargs = frame.f_locals.get("kwargs")
    return dict(kwargs) if isinstance(kwargs, dict) else None


def capture(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], mode: str) -> Capture:
    """Probe `model` once in `mode`, keeping each module's first call (see the module docstring)."""
    calls: dict[int, Captured] = {}
    mine = {id(m) for m in model.modules()}
    keep = _faked if mode == "real" else _as_is

    def before(module: nn.Module, call_args: tuple[Any, ...]) -> None:
        key = id(module)
        if key in mine and key not in calls:
            found = _kwargs_of_caller()
            if found is not None:
                calls[key] = Captured(len(calls), keep(tuple(call_args)), keep(found))

    def after(module: nn.Module, call_args: Any, output: Any) -> None:
        got = calls.get(id(module))
        if got is None:
            return
        if got.output is MISSING:
            got.output, got.shape = keep(output), _shape_of(output)
        elif not got.varied and _shape_of(output) != got.shape:
            got.varied = True

    pre = nn_module.register_module_forward_pre_hook(before)
    post = nn_module.register_module_forward_hook(after)
    try:
        with warnings.catch_warnings():
            # torch warns that global hooks fire twice around an OptimizedModule inside the
            # model: ours keep the first call only, and the warning is about the check's hooks.
            warnings.filterwarnings("ignore", message=".*global hooks on modules.*")
            report = run_probe(model, args, kwargs, mode=mode, memoise=False, flops=False)
    finally:
        post.remove()
        pre.remove()
    return Capture(report, calls)
