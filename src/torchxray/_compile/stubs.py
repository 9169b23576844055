"""Checked children stand in for themselves while a parent is traced: `Stubs`.

A parent's trace would otherwise trace every child again (24 identical blocks, once per block and
once more inside the parent: ~4x the cost of the blocks alone). A child already checked is given,
for the parent's trace only, an instance ``forward`` that returns its recorded output again with
every tensor replaced by an empty one of the same shape, strides and dtype: dynamo traces one
factory call per tensor, and the parent sees outputs shaped as the real ones. Under grad mode each
floating output is also joined (a zero added) to the inputs and a parameter that require grad, so
that what autograd derives it from is the real call's (`_with_grad`). A child whose own
check found a break gets one too, so that the parent's trace goes on past it (its break is
reported once, by the child).

Not ``torch._dynamo.disable``: calling a disabled function inside a compiled region is itself a
graph break, which ``error_on_graph_break`` turns into an error in the parent.

The output is rebuilt with ``torch.utils._pytree`` (tuples, lists, dicts, a transformers
``ModelOutput``); leaves that are not tensors (a cache object, None, a number) are handed back as
the objects the probe saw. `plain=True` keeps to outputs made of tensors, None and tuples or
lists of them, rebuilt without pytree: the fallback when dynamo cannot trace a richer rebuild
(`_compile.check` retries with it). A tensor subclass leaf is never faked (an empty plain tensor
would trace differently): such a child is traced through inside its parent. Every instance
``forward`` set here is removed (or the one that was there put back) on leaving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

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


def _make_plain(spec: Any) -> Any:
    if spec is None:
        return None
    if spec[0] == _TENSOR:
        _, shape, stride, dtype, device = spec
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    items = [_make_plain(s) for s in spec[1]]
    return items if spec[0] == "list" else tuple(items)


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


def _grad_sources(module: nn.Module, args: Any, kwargs: Any) -> list[torch.Tensor]:
    """What the real call's outputs would be derived from, for autograd: under grad mode, the
    input tensors that require grad and a parameter of the module that does."""
    if not torch.is_grad_enabled():
        return []
    out = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    out = [t for t in out if t.requires_grad]
    return out + [p for p in module.parameters() if p.requires_grad][:1]


def _with_grad(out: Any, module: nn.Module, args: Any, kwargs: Any) -> Any:
    """`out` with each floating tensor derived, for autograd, from what the real call's would be:
    joined to each input and a parameter that require grad by adding a zero read off them. An
    empty stand-in cuts that chain, and dynamo traces what follows differently (a tensor that
    had ``requires_grad_()`` and reaches the output is a break in the real forward only); not
    ``requires_grad_()`` here, which would itself be one."""
    sources = _grad_sources(module, args, kwargs)
    if not sources:
        return out
    zero = sources[0].reshape(-1)[:1].sum() * 0
    for s in sources[1:]:
        zero = zero + s.reshape(-1)[:1].sum() * 0

    def join(t: torch.Tensor) -> torch.Tensor:
        if not (t.is_floating_point() or t.is_complex()):
            return t
        return t + zero.to(device=t.device, dtype=t.dtype)

    return pytree.tree_map_only(torch.Tensor, join, out)


def _stub(module: nn.Module, value: Any, plain: bool) -> Callable[..., Any] | None:
    if plain or _plain(value) is not _MISSING:  # the cheaper rebuild where it serves
        spec = _plain(value)
        if spec is _MISSING:
            return None

        def forward(*args: Any, **kwargs: Any) -> Any:
            return _with_grad(_make_plain(spec), module, args, kwargs)

        return forward
    general = _general(value)
    if general is _MISSING:
        return None
    specs, tree = general

    def forward_tree(*args: Any, **kwargs: Any) -> Any:
        leaves = [
            torch.empty_strided(s[1], s[2], dtype=s[3], device=s[4]) if s[0] == _TENSOR else s[1]
            for s in specs
        ]
        return _with_grad(pytree.tree_unflatten(leaves, tree), module, args, kwargs)

    return forward_tree


STUB_FILE = _stub.__code__.co_filename  # a break in this file is the stub's, not the model's


class Stubs:
    """Context manager: each module in `outputs` (module -> its recorded output) answers with
    that output's empty copy while inside (see the module docstring)."""

    def __init__(self, outputs: list[tuple[nn.Module, Any]], plain: bool = False) -> None:
        self._outputs = outputs
        self._plain = plain
        self._saved: list[tuple[nn.Module, Any]] = []

    def __enter__(self) -> Stubs:
        for module, output in self._outputs:
            stub = _stub(module, output, self._plain)
            if stub is None:
                continue
            self._saved.append((module, vars(module).get("forward", _MISSING)))
            module.forward = stub  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for module, before in reversed(self._saved):
            if before is _MISSING:
                vars(module).pop("forward", None)
            else:
                module.forward = before  # type: ignore[method-assign]
        self._saved.clear()
