"""Tensor subclasses that hold their data in other tensors (torchao's quantized weights, DTensor,
NF4...): what such a tensor stores, against what it stands for.

A *wrapper* subclass implements ``__tensor_flatten__`` (the protocol torch.compile and FSDP use to
see inside one): its shape and dtype are logical (a float32 weight of 32x64) while its memory is
that of its inner tensors (an int8 ``qdata`` and a float32 ``scale``). `logical_bytes` is what
the shape and dtype say, `stored_bytes` what the inner tensors hold, counted recursively.
`plain_values` gives a tensor whose values can be read element by element, for comparisons and
statistics: a wrapper that knows how to ``dequantize()`` itself does, else None.

    >>> import torch
    >>> t = torch.ones(4, 4)
    >>> is_wrapper(t), stored_bytes(t) == logical_bytes(t) == 64
    (False, True)
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["inner_tensors", "is_wrapper", "logical_bytes", "plain_values", "stored_bytes"]


def is_wrapper(t: Any) -> bool:
    """Whether `t` is a tensor subclass holding its data in inner tensors. FakeTensor (a probe's
    own) is not: it stands for a plain tensor."""
    if not isinstance(t, torch.Tensor) or type(t) in (torch.Tensor, torch.nn.Parameter):
        return False
    from torch._subclasses.fake_tensor import FakeTensor

    return callable(getattr(type(t), "__tensor_flatten__", None)) and not isinstance(t, FakeTensor)


def inner_tensors(t: torch.Tensor) -> list[torch.Tensor]:
    """The tensors a wrapper holds (its ``__tensor_flatten__`` attributes), None ones skipped;
    [] for a plain tensor or a wrapper whose flatten fails."""
    if not is_wrapper(t):
        return []
    try:
        names, _ = t.__tensor_flatten__()  # type: ignore[attr-defined]
    except Exception:
        return []
    out = []
    for name in names:
        inner = getattr(t, name, None)
        if isinstance(inner, torch.Tensor):
            out.append(inner)
    return out


def logical_bytes(t: torch.Tensor) -> int:
    """Bytes the tensor's shape and dtype describe."""
    return t.numel() * t.element_size()


def stored_bytes(t: torch.Tensor) -> int:
    """Bytes the tensor keeps in memory: a wrapper's inner tensors (recursively), else its own
    elements. A wrapper that cannot be opened counts as its logical size."""
    inner = inner_tensors(t)
    if not inner:
        return logical_bytes(t)
    return sum(stored_bytes(i) for i in inner)


def plain_values(t: torch.Tensor) -> torch.Tensor | None:
    """`t` itself if plain; a wrapper's dequantized values (a plain tensor of its logical shape)
    when it can dequantize itself; else None (its values cannot be read one by one)."""
    if not is_wrapper(t):
        return t
    dequantize = getattr(t, "dequantize", None)
    if callable(dequantize):
        try:
            out = dequantize()
        except Exception:
            return None
        if isinstance(out, torch.Tensor) and not is_wrapper(out) and out.shape == t.shape:
            return out
    return None


def layout(t: torch.Tensor) -> str:
    """The class that stores `t`: "Tensor" for a plain one, else the subclass's name."""
    return type(t).__name__ if is_wrapper(t) else "Tensor"
