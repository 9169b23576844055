"""What a run may leave behind in a model's Python state (issue 39), as data the sweep and the
tests compare: `python_state` (every module's attributes by identity, the containers among them
opened to a bounded depth, each parameter's tensor hooks) and `fakes_reachable` (FakeTensors, and
meta tensors that were not there before, reachable from the model)."""

from __future__ import annotations

import collections
from typing import Any

import torch
from torch import nn

_OPEN = (list, dict, set, collections.deque)
_DEPTH = 3


def _contents(value: Any, depth: int = 0) -> Any:
    if depth > _DEPTH:
        return id(value)
    if isinstance(value, dict):
        return tuple((k if isinstance(k, (str, int)) else id(k), _contents(v, depth + 1))
                     for k, v in value.items())  # fmt: skip
    if isinstance(value, (list, collections.deque)):
        return tuple(_contents(v, depth + 1) for v in value)
    if isinstance(value, set):
        return frozenset(map(id, value))
    return id(value)


def python_state(model: nn.Module) -> dict[str, dict[str, Any]]:
    """path -> {attribute: identity, or a container's contents; "hooks of <tensor>": ids}."""
    out: dict[str, dict[str, Any]] = {}
    for path, m in model.named_modules(remove_duplicate=True):
        d = vars(m)
        row = {k: _contents(v) if isinstance(v, _OPEN) else id(v) for k, v in d.items()}
        for name, t in (*m._parameters.items(), *m._buffers.items()):
            if t is not None:
                row[f"hooks of {name}"] = tuple(getattr(t, "_backward_hooks", None) or ())
        out[path] = row
    return out


def diff_python_state(before: dict[str, Any], after: dict[str, Any], limit: int = 3) -> list[str]:
    """The first differences, as "path: [attributes]"."""
    wrong = []
    for path in sorted(before.keys() | after.keys()):
        a, b = before.get(path), after.get(path)
        if a != b:
            a, b = a or {}, b or {}
            keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            wrong.append(f"{path or '(root)'}: {keys[:4]}")
            if len(wrong) >= limit:
                break
    return wrong


def _tensors_in(value: Any, depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        return [("", value)]
    if depth > _DEPTH:
        return []
    found: list[tuple[str, torch.Tensor]] = []
    if isinstance(value, dict):
        items = [(f"[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, (list, tuple, collections.deque)):
        items = [(f"[{i}]", v) for i, v in enumerate(value)]
    else:
        return []
    for where, v in items:
        found.extend((where + w, t) for w, t in _tensors_in(v, depth + 1))
    return found


def meta_ids(model: nn.Module) -> set[int]:
    """The meta tensors reachable from the model now (a model built on meta holds its own)."""
    return {id(t) for _, t in _reachable(model) if t.is_meta}


def _reachable(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    out = []
    for path, m in model.named_modules(remove_duplicate=True):
        for key, v in vars(m).items():
            for where, t in _tensors_in(v):
                out.append((f"{path or '(root)'}.{key}{where}", t))
    return out


def fakes_reachable(model: nn.Module, meta_before: set[int]) -> list[str]:
    """Where a FakeTensor, or a meta tensor that was not there before, sits in the model."""
    from torch._subclasses.fake_tensor import FakeTensor

    return [
        f"{where} is a {type(t).__name__} on {t.device}"
        for where, t in _reachable(model)
        if isinstance(t, FakeTensor) or (t.is_meta and id(t) not in meta_before)
    ]
