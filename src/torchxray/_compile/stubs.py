"""Checked children stand in for themselves while a parent is traced: `Stubs`.

A parent's trace would otherwise trace every child again (24 identical blocks, once per block and
once more inside the parent: ~4x the cost of the blocks alone). A child already checked is given,
for the parent's trace only, a ``forward`` that returns its recorded output again with every
tensor replaced by an empty one of the same shape, strides and dtype: dynamo traces one factory
call per tensor, and the parent sees outputs shaped as the real ones. Under grad mode each
floating output is also joined (the sum of each added) to the inputs that require grad, or where
none does to a parameter that requires grad, so that it requires grad, and is derived from what
the graph holds, where the real output would be (`_grad_zero`, `_joined`; dynamo's checks read
both); a block whose one output is shaped as its one input, which requires grad, answers with
that input itself instead (`_same`: no op where three were). That parameter is one for all the
stand-ins of a trace (`Stubs.reads`), joined only by those whose module has one that requires
grad: which parameter an output derives from changes no verdict, and export lifts every
parameter the forward reads (a tenth of a 24-block export went on 23 stand-ins each reading its
own). A module inside another stand-in is not stood in for: its parent's stand-in never calls
it (shared with another parent, it runs as itself there, traced through). Each op and helper
call in a stand-in costs dynamo and export about as much as a small layer of the model
(`_tensor_stub`), and so does a call through ``nn.Module._call_impl``: the stand-in is the
``forward`` of a subclass the module belongs to while inside, where it can be (`_stand_in`). A
child whose own check found a break gets one too, so that the parent's trace goes on past it
(its break is reported once, by the child).

Not ``torch._dynamo.disable``: calling a disabled function inside a compiled region is itself a
graph break, which ``error_on_graph_break`` turns into an error in the parent.

The output is rebuilt with ``torch.utils._pytree`` (tuples, lists, dicts, a transformers
``ModelOutput``); leaves that are not tensors (a cache object, None, a number) are handed back as
the objects the probe saw. `plain=True` keeps to outputs made of tensors, None and tuples or
lists of them, rebuilt without pytree: the fallback when dynamo cannot trace a richer rebuild
(`_compile.check` retries with it). A tensor subclass leaf is never faked (an empty plain tensor
would trace differently): such a child is traced through inside its parent. Every module's own
class, and every instance ``forward`` (removed, or the one that was there put back), is restored
on leaving.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch._prims_common import make_contiguous_strides_for
from torch.utils import _pytree as pytree

if TYPE_CHECKING:
    from .capture import Captured

__all__ = ["STUB_FILE", "Stubs", "rebuildable"]

_MISSING = object()
_TENSOR = "t"


def _tensor_spec(value: torch.Tensor) -> Any:
    from torch._subclasses.fake_tensor import FakeTensor

    if type(value) is not torch.Tensor and not isinstance(value, FakeTensor):
        return _MISSING
    return (_TENSOR, tuple(value.shape), tuple(value.stride()), value.dtype, value.device)


def _plain(value: Any) -> Any:
    """Tensors, None and tuples/lists of them, as nested specs; `_MISSING` for anything else."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return _tensor_spec(value)
    if type(value) in (tuple, list):
        items = [_plain(v) for v in value]
        if any(i is _MISSING for i in items):
            return _MISSING
        return ("list" if type(value) is list else "tuple", tuple(items))
    return _MISSING


def _general(value: Any) -> Any:
    """(leaf specs, treespec): a tensor leaf as its spec, any other leaf as ("c", itself)."""
    try:
        leaves, tree = pytree.tree_flatten(value)
    except Exception:  # noqa: BLE001 - a registration pytree cannot flatten: not stubbed
        return _MISSING
    specs = []
    for leaf in leaves:
        spec = _tensor_spec(leaf) if isinstance(leaf, torch.Tensor) else ("c", leaf)
        if spec is _MISSING:
            return _MISSING
        specs.append(spec)
    return tuple(specs), tree


def rebuildable(value: Any, plain: bool = False) -> bool:
    return (_plain(value) if plain else _general(value)) is not _MISSING


def _grad_path(module: nn.Module) -> tuple[str, ...] | None:
    """Where the module's first parameter that requires grad is, as attribute names from the
    module, found once, before tracing: looked up inside the stand-in, dynamo would trace
    ``parameters()``'s generators for every stand-in. The stand-in reads the parameter through the module when it runs, not a reference
    taken now: non-strict export swaps registered parameters for its own fakes, and a tensor
    held in the stand-in's closure would be traced as a constant that does not require grad."""
    name = next((n for n, p in module.named_parameters() if p.requires_grad), None)
    return None if name is None else tuple(name.split("."))


Source = tuple[nn.Module, tuple[str, ...]] | None  # (a module, where its grad parameter is)


def _param(source: Source) -> torch.Tensor | None:
    if source is None:
        return None
    found: Any = source[0]
    for part in source[1]:
        found = getattr(found, part)
    return found  # type: ignore[no-any-return]


def _needing_grad(value: Any, out: list[torch.Tensor]) -> None:
    """The tensors among `value`'s pytree leaves that require grad, appended to `out`. Tuples,
    lists and dicts are walked here and anything else is handed to pytree (a ModelOutput, a
    cache): inside a trace, ``pytree.tree_leaves`` of the whole call cost dynamo about 10 ms a
    stand-in, most of a 24-block trace, where most calls are a tensor or two."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            out.append(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _needing_grad(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _needing_grad(item, out)
    elif value is not None and not isinstance(value, (bool, int, float, str)):
        for leaf in pytree.tree_leaves(value):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                out.append(leaf)


def _grad_zero(param: torch.Tensor | None, args: Any, kwargs: Any) -> torch.Tensor | None:
    """Under grad mode, a 0-d tensor derived, for autograd, from what the real call's outputs
    would be: the input tensors that require grad, or, where none does, a parameter of the
    module that does (None when there is neither). Its value is never computed (the check's
    backend raises before the graph runs), and it is made of as few ops as can be: each costs
    dynamo a fake run, a 24-block trace has one stand-in per block."""
    if not torch.is_grad_enabled():
        return None
    sources: list[torch.Tensor] = []
    _needing_grad(args, sources)
    _needing_grad(kwargs, sources)
    if not sources and param is not None:
        sources.append(param)
    if not sources:
        return None
    zero = sources[0].sum()
    for s in sources[1:]:
        zero = zero + s.sum()
    return zero


def _joined(t: torch.Tensor, zero: torch.Tensor | None) -> torch.Tensor:
    """`t` derived from `zero` (see `_grad_zero`) where it is floating: an empty stand-in cuts
    what autograd derives the real output from, and dynamo traces what follows differently (a
    tensor that had ``requires_grad_()`` and reaches the output is a break in the real forward
    only); not ``requires_grad_()`` here, which would itself be one."""
    if zero is None or not (t.is_floating_point() or t.is_complex()):
        return t
    if zero.dtype != t.dtype or zero.device != t.device:
        zero = zero.to(device=t.device, dtype=t.dtype)
    return t + zero


def _make_plain(spec: Any, zero: torch.Tensor | None) -> Any:
    if spec is None:
        return None
    if spec[0] == _TENSOR:
        _, shape, stride, dtype, device = spec
        return _joined(torch.empty_strided(shape, stride, dtype=dtype, device=device), zero)
    items = [_make_plain(s, zero) for s in spec[1]]
    return items if spec[0] == "list" else tuple(items)


def _keeps_input(call: Captured, spec: Any) -> bool:
    """Whether the recorded call took one tensor, and no keyword, shaped as its output (shape,
    dense strides, dtype, device): a block that keeps its input's shape (a residual block)."""
    if call.kwargs or len(call.args) != 1 or not isinstance(call.args[0], torch.Tensor):
        return False
    return _tensor_spec(call.args[0]) == spec and spec[2] == tuple(
        make_contiguous_strides_for(spec[1])
    )


def _tensor_stub(spec: Any, source: Source, keeps: bool) -> Callable[..., Any]:
    """The common stand-in, one tensor out, written flat: what `_make_plain`, `_grad_zero` and
    `_joined` do, without their calls, each of which dynamo inlines (a third of a stand-in's
    cost in a 24-block trace). Where the recorded call `keeps` its input's shape (decided here,
    from the recording: each test inside costs dynamo too, ~2 ms a stand-in for the shape,
    dtype, device and layout), see `_same`. Any other call goes through `_grad_zero`."""
    _, shape, stride, dtype, device = spec
    floating = dtype.is_floating_point or dtype.is_complex

    def forward(_standin: nn.Module, *args: Any, **kwargs: Any) -> Any:
        if not floating or not torch.is_grad_enabled():
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)
        if kwargs or len(args) != 1 or not isinstance(args[0], torch.Tensor):
            zero = _grad_zero(_param(source), args, kwargs)
        elif args[0].requires_grad:
            zero = args[0].sum()
        else:
            param = _param(source)
            zero = param.sum() if param is not None else None
        out = torch.empty_strided(shape, stride, dtype=dtype, device=device)
        if zero is None:
            return out
        if zero.dtype != dtype or zero.device != device:
            zero = zero.to(device=device, dtype=dtype)
        return out + zero

    return _same(forward) if keeps else forward


def _same(forward: Callable[..., Any]) -> Callable[..., Any]:
    """The stand-in of a call that keeps its input's shape: where the input requires grad, the
    output is the input itself, shaped, derived and requiring grad as the real output; no op,
    where an op costs dynamo about 0.3 ms and export 1 ms a stand-in (a 24-block export 66 ->
    34 ms). The real output is a new tensor, so an in-place op on this one changes the input
    too: values, which a trace never reads, and nothing a trace decides on, but for autograd's
    refusal of an in-place op on a leaf that requires grad or on a view of one (a parameter, a
    slice of it, an input that requires grad), where the output is a copy (one op, as derived).
    Code that compares the output with its input (``is``, ``data_ptr``) or detaches it in place
    (``detach_``, which would detach the input too) could tell them apart: none of the sampled
    timm and transformers models does. Other inputs go to `forward`."""

    def same(_standin: nn.Module, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and len(args) == 1 and args[0].requires_grad:
            if not args[0].is_leaf and args[0]._base is None:
                return args[0]
            return args[0].clone(memory_format=torch.contiguous_format)
        return forward(_standin, *args, **kwargs)

    return same


def _stub(call: Captured, plain: bool, source: Source) -> Callable[..., Any] | None:
    """The stand-in of a module whose recorded call is `call`; None where its output cannot be
    rebuilt. `source`: the parameter it joins its outputs to, None for a module without a
    parameter that requires grad."""
    value = call.output
    if plain or _plain(value) is not _MISSING:  # the cheaper rebuild where it serves
        spec = _plain(value)
        if spec is _MISSING:
            return None
        if spec is not None and spec[0] == _TENSOR:
            return _tensor_stub(spec, source, _keeps_input(call, spec))

        def forward(_standin: nn.Module, *args: Any, **kwargs: Any) -> Any:
            return _make_plain(spec, _grad_zero(_param(source), args, kwargs))

        return forward
    general = _general(value)
    if general is _MISSING:
        return None
    specs, tree = general

    def forward_tree(_standin: nn.Module, *args: Any, **kwargs: Any) -> Any:
        zero = _grad_zero(_param(source), args, kwargs)
        leaves = [
            _joined(torch.empty_strided(s[1], s[2], dtype=s[3], device=s[4]), zero)
            if s[0] == _TENSOR
            else s[1]
            for s in specs
        ]
        return pytree.tree_unflatten(leaves, tree)

    return forward_tree


STUB_FILE = _stub.__code__.co_filename  # a break in this file is the stub's, not the model's


def _plain_class(cls: type) -> bool:
    """Whether a subclass of `cls` can be made without running code of its own: no metaclass
    but ``type`` and no ``__init_subclass__`` (which may register the subclass somewhere)."""
    if type(cls) is not type:
        return False
    return not any("__init_subclass__" in vars(c) for c in cls.__mro__ if c is not object)


def _stand_in(module: nn.Module, stub: Callable[..., Any]) -> tuple[nn.Module, str, Any]:
    """Make `stub` the module's forward; what to undo. Where it can, the module's class becomes,
    for the duration, a subclass of its own whose ``forward`` is the stand-in: dynamo then calls
    that ``forward`` straight away when the module has no hooks, as it calls any module's own
    (an instance ``forward`` makes it inline all of ``nn.Module._call_impl``: about 5 ms a call,
    most of what a 24-block trace spent on 23 stand-ins). Otherwise (a forward already set on
    the instance, a class with a metaclass or ``__init_subclass__``, a class that cannot be
    swapped) the stand-in is set on the instance, bound."""
    cls = type(module)
    if "forward" not in vars(module) and _plain_class(cls):
        name = {"forward": stub, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        try:
            module.__class__ = type(cls.__name__, (cls,), name)
            return module, "class", cls
        except TypeError:
            pass
    before = vars(module).get("forward", _MISSING)
    module.forward = types.MethodType(stub, module)  # type: ignore[method-assign]
    return module, "forward", before


class Stubs:
    """Context manager: each module in `calls` (module, its recorded call) answers with its
    recorded output's empty copy while inside (see the module docstring). `stood`: the ids of
    the modules stood in for (not those inside another, nor those whose output cannot be
    rebuilt); `reads`: the parameter the stand-ins may read (None where none has one that
    requires grad), for `export` to keep registered."""

    def __init__(self, calls: list[tuple[nn.Module, Captured]], plain: bool = False) -> None:
        self._calls = calls
        self._plain = plain
        self._saved: list[tuple[nn.Module, str, Any]] = []
        self.stood: set[int] = set()
        self.reads: torch.Tensor | None = None

    def __enter__(self) -> Stubs:
        within: dict[int, list[int]] = {}  # a module's id: the ids of the listed ones it is in
        for module, _ in self._calls:
            for inner in module.modules():
                if inner is not module:
                    within.setdefault(id(inner), []).append(id(module))
        stood = self.stood
        stood.clear()
        source: Source = None
        used = False
        # Outer modules first, so that one inside a stand-in is known to be, and left alone.
        for module, call in sorted(self._calls, key=lambda mc: len(within.get(id(mc[0]), ()))):
            if any(i in stood for i in within.get(id(module), ())):
                continue
            path = _grad_path(module)
            if path is not None and source is None:
                source = (module, path)
            stub = _stub(call, self._plain, source if path is not None else None)
            if stub is not None:
                self._saved.append(_stand_in(module, stub))
                stood.add(id(module))
                used = used or path is not None
        self.reads = _param(source) if used else None
        return self

    def __exit__(self, *exc: object) -> None:
        for module, how, before in reversed(self._saved):
            if how == "class":
                module.__class__ = before
            elif before is _MISSING:
                vars(module).pop("forward", None)
            else:
                module.forward = before  # type: ignore[method-assign]
        self._saved.clear()
