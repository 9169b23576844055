"""Compare a model with another model, a state_dict or a checkpoint file.

    >>> import torch, torch.nn as nn, torchxray as tx
    >>> a = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    >>> b = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Dropout())
    >>> _ = b.load_state_dict(a.state_dict())
    >>> d = tx.diff(a, b)
    >>> d.added, d.retyped, d.params["0.weight"].kind
    (('2',), ('1',), 'same')

``b`` may be

- a model: module paths are compared too (``added``, ``removed``, ``retyped``: another class at
  the same path, ``changed``: same class, another ``extra_repr``), as well as every tensor;
- a state_dict, or a checkpoint path (``.safetensors``; ``.pt``/``.bin``/``.pth`` through
  ``torch.load(weights_only=True, mmap=True)``, which never unpickles arbitrary objects): only
  tensors exist there, so the four module lists stay empty and ``params`` holds everything.

``params`` maps each tensor name (``state_dict`` names: parameters and persistent buffers) to a
`ParamChange` whose ``kind`` is "same", "values", "shape", "dtype", "missing" (in ``a``, not in
``b``) or "unexpected" (in ``b`` only); ``rel_change`` is ``||b - a|| / ||a||`` wherever the shapes
agree, computed in float64 a chunk at a time. On meta (or fake) tensors there are no values: the
kind comes from shape and dtype alone ("same" then means "same shape and dtype") and
``rel_change`` is None. A checkpoint is read one tensor at a time and each is let go before the
next is read, so the memory a diff adds is bounded by the largest tensor, however big the file.

Nothing is changed by a diff, on either side. A file that is missing, corrupt or refused by
``weights_only``, and a state_dict or checkpoint that shares no tensor name with ``a``, raise an
error saying what was wrong.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
import torch.nn as nn

from ._compare.checkpoint import TensorSource, open_source
from ._compare.chunks import Scratch, no_values
from ._compare.values import compare

__all__ = ["ModelDiff", "ParamChange", "diff"]

Kind = Literal["same", "values", "shape", "dtype", "missing", "unexpected"]


@dataclass(frozen=True, slots=True)
class ParamChange:
    """How one tensor differs. Shapes and dtypes are None on the side that lacks the tensor.

    Attributes:
        name: The tensor's `state_dict` name, e.g. ``"layer1.0.conv1.weight"``.
        kind: ``"same"``, ``"values"``, ``"shape"``, ``"dtype"``, ``"missing"`` (in `a` only) or
            ``"unexpected"`` (in `b` only).
        rel_change: ``||b - a|| / ||a||`` where the shapes agree (float64, a chunk at a time);
            None on meta tensors or where the shapes differ.
        shape_a: Its shape in `a`.
        shape_b: Its shape in `b`.
        dtype_a: Its dtype in `a`, e.g. ``"float32"``.
        dtype_b: Its dtype in `b`.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> a, b = nn.Linear(4, 4), nn.Linear(4, 4)
        >>> _ = b.load_state_dict(a.state_dict())
        >>> with torch.no_grad():
        ...     _ = b.bias.mul_(2)
        >>> change = tx.diff(a, b).params["bias"]
        >>> change.kind, round(change.rel_change, 6), change.shape_b
        ('values', 1.0, (4,))
    """

    name: str
    kind: Kind
    rel_change: float | None
    shape_a: tuple[int, ...] | None
    shape_b: tuple[int, ...] | None
    dtype_a: str | None
    dtype_b: str | None


@dataclass(frozen=True)
class ModelDiff:
    """What differs from ``a`` to ``b``; see the module docstring. ``source`` says what ``b`` was
    ("model", "state_dict" or "checkpoint") and ``label`` names it (the class, or the path).

    A `ModelDiff` is true when anything differs.

    Attributes:
        added: Module paths in `b` only (when `b` is a model).
        removed: Module paths in `a` only.
        retyped: Paths whose module has another class in `b`.
        changed: Paths whose module has the same class and another `extra_repr`.
        params: Every tensor name -> its `ParamChange`.
        source: What `b` was: ``"model"``, ``"state_dict"`` or ``"checkpoint"``.
        label: Its name: the class, or the file's path.
        counts: How many tensors of each kind (``{"same": 10, "values": 2}``).

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> a = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        >>> b = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Dropout())
        >>> d = tx.diff(a, b)
        >>> bool(d), d.added, d.retyped, d.counts
        (True, ('2',), ('1',), {'shape': 2})
        >>> d.by_module()
        {'0': 'shape'}
    """

    added: tuple[str, ...]
    removed: tuple[str, ...]
    retyped: tuple[str, ...]
    changed: tuple[str, ...]
    params: Mapping[str, ParamChange]
    source: str = "model"
    label: str = ""
    counts: Mapping[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """True when anything differs."""
        return bool(self.added or self.removed or self.retyped or self.changed) or any(
            c.kind != "same" for c in self.params.values()
        )

    def by_module(self, kinds: tuple[str, ...] = ("values", "shape", "dtype")) -> dict[str, str]:
        """Module path -> the first of ``kinds`` its own tensors show (badges for a tree): the path
        of ``"layer1.conv.weight"`` is ``"layer1.conv"``.

        Args:
            kinds: The kinds to report, most important first.

        Returns:
            ``{module path: kind}`` for every module with a tensor of one of `kinds`.
        """
        out: dict[str, str] = {}
        for change in self.params.values():
            if change.kind in kinds:
                path = change.name.rpartition(".")[0]
                best = out.get(path)
                if best is None or kinds.index(change.kind) < kinds.index(best):
                    out[path] = change.kind
        return out


def diff(
    a: nn.Module, b: nn.Module | Mapping[str, torch.Tensor] | str | os.PathLike[str]
) -> ModelDiff:
    """Compare ``a`` (a model) with ``b`` (a model, a state_dict or a checkpoint path).

    Nothing is changed on either side. A checkpoint is read one tensor at a time (`.safetensors`;
    `.pt` / `.bin` / `.pth` through ``torch.load(weights_only=True, mmap=True)``), so the memory a
    diff adds is bounded by the largest tensor.

    Args:
        a: The model.
        b: Another model (module paths are compared too), a `state_dict`, or a checkpoint's path.

    Returns:
        The `ModelDiff`.

    Raises:
        TypeError: `a` is not an `nn.Module`, or `b` is none of the above.
        ValueError: A state_dict or checkpoint shares no tensor name with `a`, or a file is corrupt
            or refused by ``weights_only``.
        FileNotFoundError: No file at `b`.

    Examples:
        >>> import torch, torch.nn as nn, torchxray as tx
        >>> model = nn.Linear(4, 2)
        >>> d = tx.diff(model, {"weight": torch.zeros(2, 4), "bias": model.bias.detach()})
        >>> d.source, d.params["weight"].kind, d.params["bias"].kind
        ('state_dict', 'values', 'same')
    """
    if not isinstance(a, nn.Module):
        raise TypeError(f"diff(a, b): a must be an nn.Module, got {type(a).__name__}")
    with open_source(a) as left, open_source(b) as right:
        if right.kind != "model" and right.meta and not (left.meta.keys() & right.meta.keys()):
            raise ValueError(_disjoint(left, right))
        params = _params(left, right)
    added: _Paths = ()
    removed = retyped = changed = added
    if isinstance(b, nn.Module):
        added, removed, retyped, changed = _modules(a, b)
    counts: dict[str, int] = {}
    for change in params.values():
        counts[change.kind] = counts.get(change.kind, 0) + 1
    return ModelDiff(
        added, removed, retyped, changed, params, right.kind, right.label, counts=counts
    )


def _dtype(d: torch.dtype | None) -> str | None:
    return None if d is None else str(d).removeprefix("torch.")


def _params(left: TensorSource, right: TensorSource) -> dict[str, ParamChange]:
    out: dict[str, ParamChange] = {}
    scratch = Scratch()
    for name, meta_a in left.meta.items():
        meta_b = right.meta.get(name)
        if meta_b is None:
            out[name] = ParamChange(name, "missing", None, meta_a[0], None, _dtype(meta_a[1]), None)
            continue
        kind: Any = "shape" if meta_a[0] != meta_b[0] else None
        rel, dtype_b = None, meta_b[1]
        ta = left.load(name)
        if kind is None and no_values(ta) and dtype_b is not None:
            kind = "dtype" if meta_a[1] != dtype_b else None  # a meta model: no file read at all
        elif kind is None:
            tb = right.load(name)
            dtype_b = tb.dtype  # safetensors may use a dtype it has no name for in its header
            kind = "dtype" if meta_a[1] != dtype_b else None
            result = compare(ta, tb, scratch=scratch)
            del tb  # let the checkpoint's tensor go before the next one is read
            if result is not None:
                same, rel = result
                kind = kind or ("same" if same else "values")
        out[name] = ParamChange(
            name, kind or "same", rel, meta_a[0], meta_b[0], _dtype(meta_a[1]), _dtype(dtype_b)
        )
    for name, meta_b in right.meta.items():
        if name not in left.meta:
            out[name] = ParamChange(
                name, "unexpected", None, None, meta_b[0], None, _dtype(meta_b[1])
            )
    return out


_Paths = tuple[str, ...]


def _modules(a: nn.Module, b: nn.Module) -> tuple[_Paths, _Paths, _Paths, _Paths]:
    mods_a, mods_b = dict(a.named_modules()), dict(b.named_modules())
    added = tuple(p for p in mods_b if p not in mods_a)
    removed = tuple(p for p in mods_a if p not in mods_b)
    retyped, changed = [], []
    for path, ma in mods_a.items():
        mb = mods_b.get(path)
        if mb is None:
            continue
        if type(ma) is not type(mb):
            retyped.append(path)
        elif _extra_repr(ma) != _extra_repr(mb):
            changed.append(path)
    return added, removed, tuple(retyped), tuple(changed)


def _extra_repr(m: nn.Module) -> str:
    try:
        return m.extra_repr()
    except Exception as exc:  # noqa: BLE001 - a broken extra_repr must not break a diff
        return f"<extra_repr raised {type(exc).__name__}>"


def _disjoint(left: TensorSource, right: TensorSource) -> str:
    """No shared name at all: most often a prefix ("model.", "module.") on one side."""
    ka, kb = list(left.meta), list(right.meta)
    hint = ""
    for names, other, side in ((kb, set(ka), "b"), (ka, set(kb), "a")):
        first = names[0] if names else ""
        prefixes = [first[: i + 1] for i, ch in enumerate(first) if ch == "."]
        for prefix in prefixes:
            if any(k.startswith(prefix) and k[len(prefix) :] in other for k in names):
                hint = f"; {side}'s names carry the prefix {prefix!r}: strip it first"
                break
        if hint:
            break
    return (
        f"{right.label} shares no tensor name with the model ({len(ka)} names such as "
        f"{ka[:2]}; {right.label} has {len(kb)} such as {kb[:2]}){hint}"
    )
