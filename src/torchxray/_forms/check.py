"""Per-field checks of Python values: does a value fit the field's kind, and obvious ranges."""

from __future__ import annotations

import enum
import re
from typing import Any

import torch

from .._text import short_repr
from .field import Field
from .kinds import KindInfo
from .values import expected

__all__ = ["check_range", "check_type"]

# Sizes that must be >= 1 (a zero-sized layer is almost always a typo).
_POSITIVE = frozenset(
    {
        "in_features",
        "out_features",
        "in1_features",
        "in2_features",
        "in_channels",
        "out_channels",
        "kernel_size",
        "stride",
        "dilation",
        "groups",
        "num_features",
        "num_channels",
        "num_groups",
        "num_embeddings",
        "embedding_dim",
        "embed_dim",
        "num_heads",
        "nhead",
        "d_model",
        "dim_feedforward",
        "hidden_size",
        "input_size",
        "num_layers",
        "upscale_factor",
        "downscale_factor",
        "num_parameters",
        "n_classes",
        "num_classes",
    }
)
_NON_NEGATIVE = frozenset(
    {"output_padding", "proj_size", "num_encoder_layers", "num_decoder_layers"}
)
_PROBABILITY = frozenset({"dropout", "label_smoothing"})


def _ints(value: Any) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def check_type(f: Field, info: KindInfo, value: Any) -> str | None:
    """Message if `value` does not fit the field's kind, else None."""
    if value is None:
        if f.optional or f.required is False and f.default is None:
            return None
        return f"{f.name}: expected {expected(f.kind)}, got None"
    kind = f.kind
    bad = False
    if kind == "int":
        bad = not isinstance(value, int) or isinstance(value, bool)
    elif kind == "float":
        bad = not isinstance(value, (int, float)) or isinstance(value, bool)
    elif kind == "bool":
        bad = not isinstance(value, bool)
    elif kind == "str":
        bad = not isinstance(value, str)
    elif kind == "choice":
        label = value.name if isinstance(value, enum.Enum) else value
        if info.values and value in info.values:
            label = info.choices[info.values.index(value)]
        bad = bool(f.choices) and label not in f.choices
        if bad:
            return f"{f.name}: expected one of {', '.join(f.choices)}, got {short_repr(value)}"
    elif kind == "int_or_tuple":
        if isinstance(value, str):
            bad = value not in f.choices
        elif isinstance(value, (tuple, list, torch.Size)):
            bad = not all(
                (isinstance(v, int) and not isinstance(v, bool)) or (info.none_elems and v is None)
                for v in value
            )
        else:
            bad = not isinstance(value, int) or isinstance(value, bool)
    elif kind == "dtype":
        bad = not isinstance(value, torch.dtype)
    elif kind == "device":
        bad = not isinstance(value, (torch.device, str, int))
    elif kind == "class":
        # A class or a factory (functools.partial); an instance is not what the parameter takes.
        bad = not callable(value) or isinstance(value, torch.nn.Module)
    elif kind == "callable":
        bad = not (callable(value) or isinstance(value, str))
    elif kind == "tensor":
        bad = not isinstance(value, torch.Tensor)
    elif kind == "varargs":
        bad = not isinstance(value, (tuple, list))
    elif kind == "varkw":
        bad = not isinstance(value, dict)
    if bad:
        return f"{f.name}: expected {expected(kind)}, got {short_repr(value)}"
    return None


_SPATIAL = re.compile(r"([123])d$")


def _tuple_length(cls: type, name: str) -> int | None:
    """How many ints a tuple for `name` must hold in torch.nn's 1d/2d/3d classes: one per spatial
    dimension, two per dimension for a padding layer's `padding` (left, right, top, ...). None
    where nothing fixes it (other classes, users' own)."""
    found = _SPATIAL.search(cls.__name__)
    if found is None or not cls.__module__.startswith("torch.nn."):
        return None
    dims = int(found.group(1))
    return 2 * dims if name == "padding" and cls.__name__.endswith("Pad" + found.group(0)) else dims


def check_range(cls: type, f: Field, value: Any) -> str | None:
    """Message for values outside an obvious range (sizes, probabilities) or tuples of the wrong
    length, else None."""
    name = f.name
    if f.kind == "int_or_tuple" and isinstance(value, (tuple, list, torch.Size)):
        n = _tuple_length(cls, name)
        if n is not None and len(value) != n:
            ints = "1 int" if n == 1 else f"{n} ints"
            return (
                f"{name}: {cls.__name__} takes an int or a tuple of {ints}, "
                f"got {len(value)}: {short_repr(value)}"
            )
    if name in _POSITIVE and any(v < 1 for v in _ints(value)):
        return f"{name}: expected a size >= 1, got {short_repr(value)}"
    is_pad_module = cls.__name__.endswith(("Pad1d", "Pad2d", "Pad3d"))
    if (name in _NON_NEGATIVE or name == "padding" and not is_pad_module) and any(
        v < 0 for v in _ints(value)
    ):
        return f"{name}: expected a size >= 0, got {short_repr(value)}"
    is_dropout = "Dropout" in cls.__name__
    if (name in _PROBABILITY or name == "p" and is_dropout) and isinstance(value, (int, float)):
        if not 0.0 <= float(value) <= 1.0:
            return f"{name}: expected a probability in [0, 1], got {short_repr(value)}"
    return None
