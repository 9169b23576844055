"""Per-call FLOP counting for a probe: a dispatch mode adding each op's FLOPs to the open calls.

In fake mode it also hands FakeTensorMode the model's parameters as fake views (see
`FlopCount._fake_args`), which is what lets the fake mode's per-op result cache work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry

from .._fake.convert import converts_alone
from .._trace.tensors import written_args

if TYPE_CHECKING:
    from .calls import Call
    from .edges import Produced


def _shape_of(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.shape
    if type(value) in (list, tuple):
        return type(value)(v.shape if isinstance(v, torch.Tensor) else v for v in value)
    return value


def _mm_flops(a: Any, b: Any, *_: Any, **__: Any) -> int:
    return 2 * int(a[0]) * int(a[1]) * int(b[1])


def _bmm_flops(a: Any, b: Any, *_: Any, **__: Any) -> int:
    return 2 * int(a[0]) * int(a[1]) * int(a[2]) * int(b[2])


def _formulas() -> dict[Any, Any]:
    """torch's FLOP formulas by op, unwrapped from their pytree shape wrapper when possible.

    The wrapper maps every argument through tree_map (two pytree passes per matmul, most of the
    counting cost in real mode); the formulas only ever look one level deep, so `_shape_of` does.
    """
    table: dict[Any, Any] = {}
    for op, formula in flop_registry.items():
        raw = getattr(formula, "__wrapped__", None)
        table[op] = (raw, True) if raw is not None else (formula, False)
    aten = torch.ops.aten
    # The matmul formulas call each other through the wrapper (tree_map again): most of a counted
    # Linear on small inputs. The same arithmetic, directly (test_probe checks the totals
    # against FlopCounterMode).
    table[aten.mm] = (_mm_flops, True)
    table[aten.addmm] = (lambda bias, a, b, **_: _mm_flops(a, b), True)
    table[aten.bmm] = (_bmm_flops, True)
    table[aten.baddbmm] = (lambda bias, a, b, **_: _bmm_flops(a, b), True)
    # The CPU attention kernel has no formula in torch, so CPU and meta/CUDA models disagreed
    # on attention FLOPs; it takes (query, key, value, ...) like the flash kernel.
    flash = table.get(aten._scaled_dot_product_flash_attention)
    cpu_flash = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if flash is not None and cpu_flash is not None:
        table.setdefault(cpu_flash, flash)
    return table


_FORMULAS = _formulas()
_BY_OP: dict[int, tuple[Any, Any, bool, bool, tuple[int, ...], bool]] = {}
_LIFT_FNS = (torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default)
# Exactly these types (not subclasses: a FakeTensor or a user's tensor subclass stays as it is).
_REAL_TYPES = (torch.Tensor, nn.Parameter)
_WRITABLE = _REAL_TYPES  # the real tensors whose in-place writes are reported (a copy: tests
# turn the conversion off through _REAL_TYPES and still compare the writes)


def _op_entry(func: Any) -> tuple[Any, Any, bool, bool, tuple[int, ...], bool]:
    """(func, its FLOP formula, whether its real arguments may be made fake here, whether
    even when no argument is fake yet, the positions of the arguments it writes, and whether
    its output is a view of its first argument: ``w.data`` and ``w.detach()`` are views)."""
    # FakeTensorMode refuses metadata-mutating ops on real inputs: leave those for it to refuse.
    convertible = torch.Tag.inplace_view not in getattr(func, "tags", ())
    # torch.tensor() inside a forward lifts a real tensor, which the mode turns into a constant.
    # These two are FakeTensorMode.lift_fns, named here because that attribute is a property
    # (read from an instance only) in older releases such as torch 2.2.
    convertible = convertible and func not in _LIFT_FNS
    alone = convertible and converts_alone(func)
    written = written_args(func)[0] if convertible else ()
    returns: Any = getattr(getattr(func, "_schema", None), "returns", ())
    view = bool(returns) and returns[0].alias_info is not None and not written
    return (func, _FORMULAS.get(func._overloadpacket), convertible, alone, written, view)


class FlopCount:
    """Adds each op's FLOPs (torch.utils.flop_counter's formulas) to every open call.

    Hand-written rather than FlopCounterMode itself: FlopCounterMode tries a decomposition for
    every op without a formula and tracks modules with hooks of its own: several times the cost
    per op of this one (less still with `_formulas`). The formulas, the part worth sharing, are
    torch's. In a fake run it is the fake mode's `front` (`_fake.mode`), in a real one a dispatch
    mode of its own (`mode()`); any Python dispatch mode costs a Python call per op, which is
    why real mode counts only when asked (``flops=True``). ``count=False`` (fake mode without
    FLOPs) keeps the fake-weight conversion and the dataflow and counts nothing.
    """

    def __init__(
        self,
        stack: list[Call],
        fake_mode: Any = None,
        count: bool = True,
        produced: Produced | None = None,
        wrote: Any = None,
    ) -> None:
        self.stack = stack
        # Fake mode: told of each real tensor an in-place op writes (`_trace.Trace.fake_write`).
        self.wrote = wrote
        self.views: dict[int, tuple[Any, Any]] = {}  # id(fake view) -> (it, the real weight)
        # Fake mode: the dataflow edges' producers, carried through every op (`_probe.edges`).
        self.produced = produced
        self.count = count
        self.fake_mode = fake_mode
        self.fake_type: type | None = None
        self.fakes: Any = None
        if fake_mode is not None:
            from torch._subclasses.fake_tensor import FakeTensor

            self.fake_type = FakeTensor
            # The run's fakes of real tensors (`_fake.convert`), else the converter's own.
            fakes = getattr(fake_mode, "fakes", None)
            converter = fake_mode.fake_tensor_converter
            self.fakes = fakes or (lambda t: converter.from_real_tensor(fake_mode, t))

    def front(self, func: Any, types: Any, args: Any, kwargs: Any, inner: Any) -> Any:
        """As the fake mode's front: the op run by `inner` (the fake mode), then counted."""
        kwargs = kwargs or {}
        # Looked up by id: OpOverloadPacket's __hash__ is Python code, run per op otherwise.
        seen = _BY_OP.get(id(func))
        if seen is None or seen[0] is not func:
            seen = _BY_OP[id(func)] = _op_entry(func)
        first = args[0] if args else None
        if seen[4]:
            args = self._written(args, seen)
        elif seen[2]:
            args = self._fake_args(args, seen[3])
        out = inner(func, types, args, kwargs)
        if seen[5] and type(first) in _WRITABLE and self.wrote is not None:
            # A fake view of a real weight (``w.data``): an in-place op on it writes the weight.
            self.views[id(out)] = (out, first)
        self._counted(func, args, kwargs, out, seen[1])
        return out

    def mode(self) -> TorchDispatchMode:
        """A dispatch mode that counts every op of a real run."""
        return _Counting(self)

    def _counted(self, func: Any, args: Any, kwargs: Any, out: Any, entry: Any) -> None:
        if self.produced is not None:
            self.produced.follow(func, args, out)
        if not self.stack or not self.count or entry is None:
            return
        formula, raw = entry
        if raw:
            shapes = [_shape_of(a) for a in args]
            named = {k: _shape_of(v) for k, v in kwargs.items()}
            flops = int(formula(*shapes, out_shape=_shape_of(out), **named))
        else:
            flops = int(formula(*args, **kwargs, out_val=out))
        for call in self.stack:
            call.flops += flops

    def _written(self, args: tuple[Any, ...], seen: Any) -> tuple[Any, ...]:
        """An in-place op: a real tensor it writes (``weight.mul_(0.5)`` under no_grad, an EMA
        buffer's update) is written on its fake, never for real: its real arguments are made
        fake even where FakeTensorMode would compute on them as constants. One-element tensors
        stay constants (a counter's ``add_(1)`` that a later branch reads); the run puts their
        values back (`_probe.run`)."""
        alone = seen[3]
        for i in seen[4]:
            if i >= len(args):
                continue
            a = args[i]
            if type(a) in _WRITABLE:
                if self.wrote is not None:
                    self.wrote(a)
                if a.numel() > 1:
                    alone = True
            elif type(a) is self.fake_type and self.wrote is not None:
                # A fake view of a weight (``w.data``, ``w.detach()``) made in this run.
                hit = self.views.get(id(a))
                if hit is not None and hit[0] is a:
                    self.wrote(hit[1])
        return self._fake_args(args, alone) if seen[2] else args

    def _fake_args(self, args: tuple[Any, ...], alone: bool) -> tuple[Any, ...]:
        """The model's real parameters as their fake views, converted here rather than inside
        FakeTensorMode: the mode converts them too (the same view: `_fake.convert` hands it its
        fakes) but then skips its per-op result cache for a call with any real tensor argument,
        so every convolution and BatchNorm re-ran its Python meta kernel (most of a ResNet-50
        fake probe), and its own conversion is the slow one."""
        # With real tensors alone, FakeTensorMode may compute on them instead (constant
        # propagation of the ops that take Python numbers, torch.tensor's lift), and that must
        # stay as it was: such calls are converted only next to a fake tensor. The others
        # (``aten.t`` of a Linear's weight) the mode converts anyway (`alone`).
        if not any(type(a) in _REAL_TYPES for a in args) or not (
            alone or any(type(a) is self.fake_type for a in args)
        ):
            return args
        fakes = self.fakes
        return tuple(fakes(a) if type(a) in _REAL_TYPES else a for a in args)


class _Counting(TorchDispatchMode):
    """`FlopCount` as a dispatch mode of its own (real runs: no fake mode to stand in front of)."""

    def __init__(self, counter: FlopCount) -> None:
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        seen = _BY_OP.get(id(func))
        if seen is None or seen[0] is not func:
            seen = _BY_OP[id(func)] = _op_entry(func)
        out = func(*args, **kwargs)
        self.counter._counted(func, args, kwargs, out, seen[1])
        return out
