"""Checked children stand in for themselves while a parent is traced: `Stubs`.

A parent's trace would otherwise trace every child again (24 identical blocks, once per block and
once more inside the parent: ~4x the cost of the blocks alone). A child already checked is given,
for the parent's trace only, an instance ``forward`` that returns empty tensors of the shapes,
strides and dtypes it returned in the probe: dynamo traces one factory call per tensor, and the
parent sees outputs shaped as the real ones. A child whose own check found a break gets one too,
so that the parent's trace goes on past it (its break is reported once, by the child).

Not ``torch._dynamo.disable``: calling a disabled function inside a compiled region is itself a
graph break, which ``error_on_graph_break`` turns into an error in the parent.

Only outputs made of tensors, ``None`` and tuples or lists of them are rebuilt; a child that
returned anything else (a dict, a ``ModelOutput``, a cache) is traced through inside its parent.
Every instance ``forward`` set here is removed (or the one that was there put back) on leaving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["Stubs", "spec_of"]

_MISSING = object()
Spec = Any  # None | (shape, stride, dtype, device) | tuple/list of Spec, tagged


def spec_of(value: Any) -> Spec | object:
    """`value`'s rebuildable shape, or `_MISSING` when it is not made of tensors and tuples."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor and not _is_fake(value):
            return _MISSING  # a tensor subclass: an empty plain tensor would trace differently
        return ("t", tuple(value.shape), tuple(value.stride()), value.dtype, value.device)
    if type(value) in (tuple, list):
        items = [spec_of(v) for v in value]
        if any(i is _MISSING for i in items):
            return _MISSING
        return ("list" if type(value) is list else "tuple", tuple(items))
    return _MISSING


def rebuildable(value: Any) -> bool:
    return spec_of(value) is not _MISSING


def _is_fake(value: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor)


def _make(spec: Spec) -> Any:
    if spec is None:
        return None
    if spec[0] == "t":
        _, shape, stride, dtype, device = spec
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    items = [_make(s) for s in spec[1]]
    return items if spec[0] == "list" else tuple(items)


def _stub(spec: Spec) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        return _make(spec)

    return forward


class Stubs:
    """Context manager: each module in `outputs` (module -> its recorded output) answers with
    empty tensors shaped as that output while inside (see the module docstring)."""

    def __init__(self, outputs: list[tuple[nn.Module, Any]]) -> None:
        self._outputs = outputs
        self._saved: list[tuple[nn.Module, Any]] = []

    def __enter__(self) -> Stubs:
        for module, output in self._outputs:
            spec = spec_of(output)
            if spec is _MISSING:
                continue
            self._saved.append((module, vars(module).get("forward", _MISSING)))
            module.forward = _stub(spec)  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        for module, before in reversed(self._saved):
            if before is _MISSING:
                vars(module).pop("forward", None)
            else:
                module.forward = before  # type: ignore[method-assign]
        self._saved.clear()
