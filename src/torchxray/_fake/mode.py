"""The fake mode that probes and memory traces run in: torch's FakeTensorMode, except where a meta
kernel refuses what the device's own kernel runs; and fake tensors made without a dispatch.

A fake tensor keeps its device (``cpu``) but every op on it runs the op's *meta* kernel, which
for a few ops mirrors the CUDA kernel's checks whatever the device. ``aten._grouped_mm`` is one:
its meta kernel accepts bfloat16 and float16 only ("Expected mat_a to be BFloat16 or supported
Float16 matrix, got torch.float32"), while the CPU kernel also multiplies float32. transformers'
mixture-of-experts layers (Mixtral, Qwen2-MoE: ``@use_experts_implementation``, whose default
"grouped_mm" calls ``torch.nn.functional.grouped_mm`` on CPU for torch > 2.8) therefore ran in a
plain float32 forward and failed in a fake probe. The fake mode below answers such a call on CPU
fake tensors as the CPU kernel would: same checks on dtypes (asked of the CPU kernel itself, once
per dtype, on tiny real tensors), dimensions, offsets and 16-byte strides, and the output shape
of the meta kernel.
Nothing global is patched: the override lives in the run's own mode object.

Two more things live in the mode object. Its per-op cache is reached through a cheaper key
(`_fake.quick`). And a `front` may see each op first: the probe's FLOP counter and dataflow
tracker (`_probe.flops`), which used to be a dispatch mode of its own above this one, a second
Python dispatch per op. The front sees the ops that reach the mode from outside only, as that
mode did: not those the fake mode runs itself while decomposing an op.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, unset_fake_temporarily

from .convert import QuickConverter
from .quick import MODES, Quick, wrap

__all__ = ["FakeMode", "fresh", "new_fake", "quiet_fake_logs"]

try:  # by id: an OpOverload's __hash__ is Python code
    from torch._subclasses.fake_tensor import _DISPATCH_META_HANDLERS

    _META_HANDLERS = {id(op): handler for op, handler in _DISPATCH_META_HANDLERS.items()}
except ImportError:  # another torch release: torch's mode answers them as before
    _META_HANDLERS = {}
_MODES = MODES  # the dispatch keys of Python dispatch modes (the fake mode, the FLOP counter)
_GROUPED_MM = getattr(torch.ops.aten, "_grouped_mm", None)
_GROUPED_MM_DEFAULT = getattr(_GROUPED_MM, "default", None)


class FakeMode(FakeTensorMode):
    """FakeTensorMode with CPU semantics for the ops listed in the module docstring, its per-op
    cache reached through a cheaper key (`_fake.quick`), and an optional `front`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._export = bool(kwargs.get("export", False))
        self.fake_tensor_converter = self.new_converter()
        self._quick = Quick(self)
        # front(func, types, args, kwargs, inner) -> the op's output, `inner` running it here.
        self.front: Any = None
        self.fakes: Any = None  # a run's fakes of real tensors (`_fake.convert`), if it has one
        self._inside = 0  # > 0 while the front's op runs (its decompositions come back here)

    def new_converter(self) -> QuickConverter:
        """A converter as the mode makes one, plain tensors' fakes made directly
        (`_fake.convert`)."""
        return QuickConverter(copy_data=self.propagate_real_tensors, export=self._export)

    def dispatch(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        handler = _META_HANDLERS.get(id(func))
        if handler is not None:
            # What torch's mode answers first (a fake tensor's device, sizes): no op for the
            # front to see, and asked by C++ code many times a forward.
            return handler(args)
        front = self.front
        if front is None or self._inside:
            return self._run(func, types, args, kwargs)
        self._inside += 1
        try:
            return front(func, types, args, kwargs, self._run)
        finally:
            self._inside -= 1

    def _run(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        # One identity test per op; everything else goes to torch's mode as before.
        if func is _GROUPED_MM_DEFAULT and func is not None:
            return self._grouped_mm(func, types, args, kwargs or {})
        return self._quick.dispatch(func, types, args, kwargs, super().dispatch)

    def _grouped_mm(self, func: Any, types: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        try:
            return super().dispatch(func, types, args, kwargs)
        except RuntimeError:
            out = _cpu_grouped_mm(*args, **kwargs)
            if out is None:
                raise
            return out


def _grouped_mm_params(
    mat_a: Any,
    mat_b: Any,
    offs: Any = None,
    bias: Any = None,
    out_dtype: torch.dtype | None = None,
) -> tuple[Any, Any, Any, Any, torch.dtype | None]:
    return mat_a, mat_b, offs, bias, out_dtype


def _cpu_grouped_mm(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """The fake result of ``aten._grouped_mm`` as the CPU kernel computes it, or None when the
    inputs are not all CPU tensors or the CPU kernel would refuse them too (the meta kernel's
    error then stands)."""
    mat_a, mat_b, offs, bias, out_dtype = _grouped_mm_params(*args, **kwargs)
    tensors = [t for t in (mat_a, mat_b, offs, bias) if isinstance(t, torch.Tensor)]
    fake = next((t for t in tensors if isinstance(t, FakeTensor)), None)
    if fake is None or any(_device(t).type != "cpu" for t in tensors):
        return None
    if bias is not None or (out_dtype is not None and out_dtype != mat_a.dtype):
        return None
    if mat_b.dtype != mat_a.dtype or not _cpu_accepts(mat_a.dtype):
        return None
    a2, b2 = mat_a.dim() == 2, mat_b.dim() == 2
    if mat_a.dim() not in (2, 3) or mat_b.dim() not in (2, 3):
        return None
    if (a2 or b2) != (offs is not None):
        return None
    if offs is not None and (offs.dim() != 1 or offs.dtype != torch.int32):
        return None
    if not (a2 and b2) and mat_a.size(-1) != mat_b.size(-2):
        return None
    if not (_aligned(mat_a) and _aligned(mat_b)):
        # What the CPU kernel says of these operands (the meta kernel's dtype error would not).
        raise RuntimeError("strides should be multiple of 16 bytes")
    # The output sizes of torch's meta kernel (_create_grouped_mm_output_tensor).
    if a2 and b2:
        size = [offs.size(0), mat_a.size(0), mat_b.size(1)]
    elif a2:
        if offs.size(0) != mat_b.size(0):
            return None
        size = [mat_a.size(0), mat_b.size(-1)]
    elif b2:
        if offs.size(0) != mat_a.size(0):
            return None
        size = [mat_a.size(1), mat_b.size(1)]
    else:
        if mat_a.size(0) != mat_b.size(0):
            return None
        size = [mat_a.size(0), mat_a.size(1), mat_b.size(-1)]
    # new_empty on a fake tensor dispatches back into the fake mode: a fake result, no memory.
    return fake.new_empty(size, dtype=mat_a.dtype, device=_device(mat_a))


def _aligned(mat: torch.Tensor) -> bool:
    """Row- or column-major in the last two dimensions with the other stride a multiple of 16
    bytes: what the CPU kernel accepts (checked against it on 2-d and 3-d, plain and
    transposed operands)."""
    end = mat.dim() - 1
    stride, size = mat.stride(), mat.element_size()
    if stride[end - 1] == 1 and stride[end] >= max(1, mat.shape[end - 1]):
        return bool(stride[end] * size % 16 == 0)
    if stride[end] == 1 and stride[end - 1] >= max(1, mat.shape[end]):
        return bool(stride[end - 1] * size % 16 == 0)
    return False


def _device(t: torch.Tensor) -> torch.device:
    return t.fake_device if isinstance(t, FakeTensor) else t.device


@functools.cache
def _cpu_accepts(dtype: torch.dtype) -> bool:
    """Whether torch's CPU grouped_mm kernel multiplies `dtype` (asked once, on 8x8 tensors,
    16-byte aligned as the kernel wants)."""
    with unset_fake_temporarily():
        try:
            a = torch.zeros(8, 8, dtype=dtype)
            b = torch.zeros(1, 8, 8, dtype=dtype)
            torch._grouped_mm(a, b, offs=torch.tensor([8], dtype=torch.int32))
        except (RuntimeError, NotImplementedError, TypeError):
            return False
    return True


def fresh(meta: tuple[Any, ...], like: torch.Tensor) -> torch.Tensor:
    """A new tensor of ``meta`` (shape, stride, dtype, device), a fake one when ``like`` is: the
    memo's replays hand out one per output when the dataflow edges follow tensor identity.

    Why not ``torch.empty_strided`` under the fake mode: that goes through the whole dispatch
    (the FLOP counter's mode, then the fake mode's cache), several times the cost of wrapping a
    meta tensor made past the modes, and was most of what edges cost a probe of BERT.
    """
    shape, stride, dtype, device = meta
    mode = getattr(like, "fake_mode", None)
    if not isinstance(like, FakeTensor) or mode is None:
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    return new_fake(mode, shape, stride, dtype, device)


def new_fake(mode: Any, shape: Any, stride: Any, dtype: torch.dtype, device: Any) -> FakeTensor:
    """A FakeTensor of `mode` with this metadata, made directly from a meta tensor that no
    dispatch mode sees (far cheaper than through the modes). The probe's memo and the memory
    trace's fake weights and replays make theirs here."""
    with torch._C._ExcludeDispatchKeyGuard(_MODES):
        elem = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    if isinstance(device, torch.device):
        return wrap(mode, elem, device)  # type: ignore[no-any-return]
    return FakeTensor(mode, elem, device)


@contextlib.contextmanager
def quiet_fake_logs() -> Iterator[None]:
    """A meta kernel that fails logs a full traceback at ERROR level before raising; the caller
    reports that error itself, so keep the log out of the notebook's output meanwhile."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    _set_level(logger, logging.CRITICAL)
    try:
        yield
    finally:
        _set_level(logger, level)


def _set_level(logger: logging.Logger, level: int) -> None:
    """``logger.setLevel(level)``, clearing the level caches of the loggers whose effective level
    that changes (the logger and its descendants) rather than those of every logger in the
    process, as setLevel does: with a model library imported that is hundreds of loggers, each
    cleared in Python, a fixed cost per probe."""
    manager = logging.Logger.manager
    if (
        getattr(logger, "manager", None) is not manager
        or not hasattr(logger, "_cache")
        or not hasattr(logging, "_acquireLock")  # Python 3.13 renamed the module lock
    ):
        logger.setLevel(level)  # another logging implementation: as before
        return
    logging._acquireLock()  # type: ignore[attr-defined]
    try:
        logger.level = logging._checkLevel(level)  # type: ignore[attr-defined]
        logger._cache.clear()
        for other in _descendants(logger, manager.loggerDict):
            other._cache.clear()
    finally:
        logging._releaseLock()  # type: ignore[attr-defined]


# name -> (how many loggers there were, the descendant loggers, the placeholders among them)
_DESCENDANTS: dict[str, tuple[int, tuple[Any, ...], tuple[tuple[str, Any], ...]]] = {}


def _descendants(logger: logging.Logger, loggers: dict[str, Any]) -> tuple[Any, ...]:
    """The loggers below `logger`, found again only when the process has more loggers or a
    placeholder below it became a logger (logging adds entries and replaces placeholders, never
    removes one)."""
    known = _DESCENDANTS.get(logger.name)
    if known is not None and known[0] == len(loggers):
        if all(loggers.get(n) is p for n, p in known[2]):
            return known[1]
    prefix = logger.name + "."
    below = [(n, v) for n, v in list(loggers.items()) if n.startswith(prefix)]
    found = tuple(v for _, v in below if isinstance(v, logging.Logger))
    held = tuple((n, v) for n, v in below if not isinstance(v, logging.Logger))
    _DESCENDANTS[logger.name] = (len(loggers), found, held)
    return found
