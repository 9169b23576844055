"""Per-field checks of Python values: does a value fit the field's kind (``check_type``), is it
in an obvious range (``check_range``), and may the search try it (``may_try``: looser, as
annotations lie).

Not a stage: the sources filter candidates with ``may_try``, the search tries values it allows,
the form validates a person's edit with ``check_type`` and ``check_range``.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any

import torch

from .._text import short_repr
from .field import Field
from .kinds import KindInfo
from .values import expected

__all__ = ["check_range", "check_type", "may_try"]

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


def _ints_only(value: Any) -> bool:
    return type(value) is int or isinstance(value, tuple) and all(type(x) is int for x in value)


def _strings_by_key(value: dict[Any, Any]) -> bool:
    return bool(value) and all(type(k) is str and type(v) is str for k, v in value.items())


def may_try(infos: dict[str, KindInfo], f: Field, value: Any) -> bool:
    """Whether the search may try ``value`` for ``f`` (``infos``: the fields' kinds)."""
    # None is tried for any field, required ones too: annotations say `int` where callers
    # pass None (a layer made only when its width is given, ``rules/unset_width.py``); the build
    # decides. Annotations that lie are tried past: a float where `int` is annotated (a live
    # attribute 1.0 for attn_ratio: int), an int for a `bool` (below).
    if value is None or type(value) is float and f.kind == "int":
        return True
    if f.kind == "int" and isinstance(value, tuple) and all(type(x) is int for x in value):
        return True  # widths per layer where `int` is annotated (out_chs = to_2tuple(...))
    if isinstance(value, str) and f.kind == "int" and not f.annotation:
        return True  # a kind read from an int default only (padding=0 that takes "same")
    if f.kind == "str" and not f.annotation and _ints_only(value):
        return True  # a kind read from a str default only (padding="SAME" that takes (3, 3))
    if f.kind == "str" and not f.annotation and type(value) is dict and _strings_by_key(value):
        return True  # a str default only, one string per part too (activation={"trunk": "tanh"})
    if type(value) is int and f.kind == "tensor":
        return True  # a width annotated as a tensor (the candidates offer one by its name)
    if isinstance(value, list) and f.kind == "tensor" and not f.annotation:
        return True  # a list the constructor keeps as a tensor (``sources/tensor_lists.py``)
    if type(value) is int and f.kind == "class" and not f.annotation and f.value is None:
        return True  # a count named like a layer (n_layer), read as a class by its name only
    if type(value) is int and f.kind == "bool":
        return True  # `layer_idx: bool | None` (transformers' LED) holds a layer's index
    if f.kind == "float" and isinstance(value, list) and all(type(x) is float for x in value):
        return True  # per-block rates where `float` is annotated (drop_path=dpr[i] inside)
    if isinstance(value, tuple) and isinstance(f.default, tuple) and f.kind == "class":
        return True  # one class per layer (act_layer=(nn.ReLU6, None)) read as a class
    if isinstance(value, type) and f.kind == "str" and issubclass(value, torch.nn.Module):
        return True  # a layer's class where its registry name is annotated (act_layer: str)
    if isinstance(value, functools.partial) and f.kind in ("class", "callable", "literal"):
        return True  # a factory for a class field (norm_layer=partial(BatchNorm2d, eps=...))
    return check_type(f, infos[f.name], value) is None
