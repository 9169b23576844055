"""What a probe remembers of the values a module received and returned: metadata, never data.

Tensors become `TensorInfo` (shape, dtype, device, where the tensor sat: "args[0]"); other leaves
become short text. Containers are flattened with ``torch.utils._pytree`` (dataclasses too).

On the common case (one tensor in, one tensor out) the recording function (`_probe.calls`) keeps
the raw ``(shape, dtype, device)`` triple, which holds no tensor, and `meta_info` turns it into a
TensorInfo only when a report is read. `tests/test_probe_fast.py` checks that this gives the
same report as converting everything with `leaf_infos` at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

import torch
from torch.utils import _pytree as pytree

from .records import TensorInfo

_SUMMARY_CHARS = 40

Meta = tuple[torch.Size, torch.dtype, torch.device]


def _leaf_text(value: object) -> str:
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device)):
        text = repr(value)
        return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 3] + "..."
    return f"<{type(value).__name__}>"


# TensorInfo is frozen, so equal metadata can share one instance: a dict hit costs far less than
# converting the shape and formatting dtype and device (20,000 times for 10,000 small modules).
_INFOS: dict[tuple[Any, ...], TensorInfo] = {}
_INFO_LIMIT = 4096  # a bound, so a stream of new shapes cannot grow it without end


def meta_info(meta: Meta, name: str) -> TensorInfo:
    """The TensorInfo of a raw ``(shape, dtype, device)`` triple."""
    shape, dtype, device = meta
    key = (shape, dtype, device, name)
    try:
        return _INFOS[key]
    except (KeyError, TypeError):  # TypeError: a symbolic size does not hash
        pass
    info = TensorInfo(
        tuple(int(s) for s in shape), str(dtype).removeprefix("torch."), str(device), name
    )
    if len(_INFOS) < _INFO_LIMIT:
        with contextlib.suppress(TypeError):
            _INFOS[key] = info
    return info


def _info(value: object, name: str) -> TensorInfo | str:
    if isinstance(value, torch.Tensor):
        return meta_info((value.shape, value.dtype, value.device), name)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # pytree does not flatten dataclasses; a model returning one still has tensors inside.
        return "<dataclass>"
    return _leaf_text(value)


def leaf_infos(value: object, name: str) -> tuple[TensorInfo | str, ...]:
    """Flatten `value` with torch.utils._pytree (dataclasses too) into TensorInfo / text leaves."""
    if isinstance(value, torch.Tensor):  # the common case, without pytree's cost
        return (_info(value, name),)
    if type(value) is tuple and len(value) == 1 and isinstance(value[0], torch.Tensor):
        return (_info(value[0], name + "[0]"),)  # a forward's usual args: (x,)
    if isinstance(value, tuple) and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(_info(v, f"{name}[{i}]") for i, v in enumerate(value))
    out: list[TensorInfo | str] = []
    for key_path, leaf in pytree.tree_flatten_with_path(value)[0]:
        leaf_name = name + pytree.keystr(key_path)
        if dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            fields = {f.name: getattr(leaf, f.name) for f in dataclasses.fields(leaf)}
            out.extend(leaf_infos(fields, leaf_name))
        else:
            out.append(_info(leaf, leaf_name))
    return tuple(out)


def call_inputs(
    args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> tuple[TensorInfo | str, ...]:
    infos = leaf_infos(args, "args")
    return infos + leaf_infos(kwargs, "kwargs") if kwargs else infos
