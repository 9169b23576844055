"""Fake views of the real tensors a fake run meets (weights, buffers, inputs, constants).

``FakeTensorMode``'s converter describes a real tensor in full (views, storages, autograd
metadata) and builds its fake through the meta converter, redone in every run: several times
the cost of making the fake directly, a large part of a small model's fake probe
(bench/README.md). Most tensors are plain: a dense strided leaf of at least one dimension that
is no view, spans its whole storage and shares it with no other tensor. `QuickConverter` makes
the fake of such a tensor directly, a meta tensor of the same sizes and strides wrapped as a
FakeTensor (`_fake.quick.wrap`) with the converter's ``requires_grad``, parameter flag and
constant, and puts it in the converter's memo as the meta converter does; every other tensor
(a 0-d one, whose value the converter keeps for ``item()``, included) goes to torch's converter
as before. Whether direct fakes equal the converter's is
checked once per process; where they differ in anything a run can see (another torch release),
every tensor goes to torch's converter.

`Fakes` belongs to one run: the run's fake of each real tensor, looked up by identity before the
converter's weak memo; it holds each real tensor it met until `release`, so that an id is never
reused within the run, and nothing after it.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorConverter
from torch.utils._python_dispatch import _disable_current_modes

from .quick import MODES, wrap

__all__ = ["Fakes", "QuickConverter", "converts_alone", "plain"]

_LAYOUT = torch._C.TensorBase.layout.__get__  # type: ignore[attr-defined]
_STRIDED = torch.strided
_REAL = (torch.Tensor, nn.Parameter)
_use_count = getattr(torch._C, "_storage_Use_Count", None)


def converts_alone(func: Any) -> bool:
    """Whether FakeTensorMode turns the real tensor arguments of `func` into fakes even when no
    argument is fake: anything but the ops it propagates constants through (those that take
    Python numbers for tensors) and those it answers before converting (``prim.device``,
    sizes). False where this torch release does not say."""
    try:
        from torch._subclasses import fake_tensor as ft

        special = func in ft._DISPATCH_META_HANDLERS or func in ft._DISPATCH_HANDLE_DIRECTLY
        return not special and not ft.should_allow_numbers_as_tensors(func)
    except Exception:  # noqa: BLE001 - unknown: only next to a fake tensor, as before
        return False


def _uses(t: torch.Tensor) -> int:
    """References to `t`'s storage, counted with the storage object this call makes."""
    return int(_use_count(t.untyped_storage()._cdata))  # type: ignore[misc]


@functools.cache
def _lone_uses() -> int:
    """What `_uses` says of a tensor that alone holds its storage (-1: cannot tell)."""
    if _use_count is None:
        return -1
    try:
        with _disable_current_modes():  # first asked inside a run: a real tensor all the same
            return _uses(torch.empty(2))
    except Exception:  # noqa: BLE001 - no such count in this release: the converter for all
        return -1


def plain(t: torch.Tensor) -> bool:
    """Whether a direct fake of `t` is exactly the converter's: see the module docstring."""
    if (
        type(t) not in _REAL
        or _LAYOUT(t) is not _STRIDED
        or t._base is not None
        or not t.is_leaf
        or t.grad is not None
        or t.is_quantized
        or t.is_conj()
        or t.is_neg()
        or t.is_inference()
        or t._has_symbolic_sizes_strides
        or t.storage_offset() != 0
        or t.dim() == 0
        or (t.requires_grad and getattr(t, "grad_dtype", t.dtype) != t.dtype)
    ):
        return False
    numel = t.numel()
    span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    storage = t.untyped_storage()
    if span * t.element_size() != storage.nbytes():
        return False
    lone = _lone_uses()
    return lone >= 0 and _uses(t) == lone


def _direct(mode: Any, t: torch.Tensor, constant: torch.Tensor | None = None) -> Any:
    with torch._C._ExcludeDispatchKeyGuard(MODES):
        elem = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    fake = wrap(mode, elem, t.device)
    if t.requires_grad:
        fake.requires_grad_(True)
    if type(t) is nn.Parameter:
        fake._is_param = True  # what the converter marks a parameter's fake with
    if constant is not None:
        fake.constant = constant
    return fake


class QuickConverter(FakeTensorConverter):
    """FakeTensorConverter making the fakes of plain tensors directly (module docstring)."""

    def from_real_tensor(  # type: ignore[override]
        self,
        fake_mode: Any,
        t: torch.Tensor,
        make_constant: bool = False,
        shape_env: Any = None,
        *,
        source: Any = None,
        symbolic_context: Any = None,
        trace: bool = True,
    ) -> Any:
        if (
            shape_env is None
            and source is None
            and symbolic_context is None
            and not (make_constant and type(t) is nn.Parameter)  # torch refuses that: let it
            and _checked()
            and plain(t)
        ):
            memo = self._get_memo(t)
            if memo is not None:
                return memo
            fake = _direct(fake_mode, t, t if make_constant else None)
            self.set_tensor_memo(t, fake)
            if make_constant:
                self.add_constant_storage_mapping(fake)
            return fake
        return super().from_real_tensor(
            fake_mode,
            t,
            make_constant,
            shape_env,
            source=source,
            symbolic_context=symbolic_context,
            trace=trace,
        )


@functools.cache
def _checked() -> bool:
    """Whether direct fakes equal the converter's on a parameter, a buffer, a meta tensor and a
    constant (asked outside whatever run first needs to know)."""
    with _disable_current_modes():
        return _check()


def _check() -> bool:
    from torch._subclasses.fake_tensor import FakeTensorMode

    if not all(hasattr(FakeTensorConverter, n) for n in ("_get_memo", "set_tensor_memo")):
        return False
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    converter = mode.fake_tensor_converter
    samples = [
        nn.Parameter(torch.zeros(3, 4)),
        nn.Parameter(torch.zeros(4), requires_grad=False),
        torch.zeros(2, 3, dtype=torch.bfloat16),
        torch.zeros(5, 2, device="meta").t(),
    ]
    samples[-1] = samples[-1].contiguous()
    try:
        for t in samples:
            if not plain(t):
                return False
            a = _direct(mode, t)
            b = FakeTensorConverter.from_real_tensor(converter, mode, t)
            if _signature(a) != _signature(b):
                return False
        c = torch.zeros(0)
        a = _direct(mode, c, c)
        b = FakeTensorConverter.from_real_tensor(converter, mode, c.clone(), make_constant=True)
        if _signature(a)[:-1] != _signature(b)[:-1] or b.constant is None:
            return False
    except Exception:  # noqa: BLE001 - any doubt: the converter
        return False
    return True


def _signature(f: Any) -> tuple[Any, ...]:
    return (
        type(f),
        tuple(f.shape),
        f.stride(),
        f.dtype,
        f.device,
        f.requires_grad,
        f.is_leaf,
        isinstance(f, nn.Parameter),
        f.storage_offset(),
        f.untyped_storage().nbytes(),
        torch._C._dispatch_keys(f),
        sorted((k, v) for k, v in vars(f).items() if k not in ("fake_mode", "constant")),
        f.constant is None,
    )


class Fakes:
    """The run's fake of each real tensor it is asked about, one per tensor."""

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self.made: dict[int, tuple[torch.Tensor, Any]] = {}

    def __call__(self, t: torch.Tensor) -> Any:
        hit = self.made.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        mode = self.mode
        fake = mode.fake_tensor_converter.from_real_tensor(mode, t)
        self.made[id(t)] = (t, fake)
        return fake

    def swapped(self, t: torch.Tensor, value: Any) -> None:
        """The forward gave real tensor `t` new data (``t.data = value``, a fake in this run):
        the fake of `t` is `value` from now on, for this run's fake front and for the fake
        mode's own conversions (`_trace/data.py` puts `t`'s data back after the run)."""
        from torch._subclasses.fake_tensor import FakeTensor

        if not isinstance(value, FakeTensor):
            return
        self.made[id(t)] = (t, value)
        converter = self.mode.fake_tensor_converter
        with contextlib.suppress(Exception):  # a release without the memo: the front's alone
            converter.set_tensor_memo(t, value)

    def release(self) -> None:
        self.made.clear()
