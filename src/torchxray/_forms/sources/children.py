"""Source: the module's children's structure. What its layers keep tells what it was given: the
widths of its layers and the shapes of their tensors (``ints``), their kernel sizes and strides
(``sizes``), their rates and epsilons (``floats``), their classes (``classes``), ratios between
its widths (``ratios``); and, in the files beside this one, per-stage widths and depths
(``layout.py``, ``stagelists.py``, ``stageconfigs.py``), block descriptions read back from the
blocks' own forms (``blocklists.py``), a network's layers gathered (``gathered.py``) and the
module's place among its parent's numbered layers (``position.py``).

``_forms/sources/pools.py`` puts these readings in the order the search tries them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from .attributes import attr
from .layout import width

__all__ = ["annotated", "class_rank", "classes", "dims", "floats", "ints", "ratios", "sizes"]

_WIDTH_ATTRS = (
    "in_channels",
    "out_channels",
    "in_features",
    "out_features",
    "num_features",
    "num_channels",
    "embedding_dim",
    "num_embeddings",
    "num_heads",
    "hidden_size",
    "dim",
    "groups",
)
_SIZE_ATTRS = ("kernel_size", "stride", "padding", "dilation", "img_size", "patch_size")
_FLOAT_ATTRS = ("eps", "p", "drop_prob", "variance_epsilon", "negative_slope", "momentum")


def dims(t: torch.Tensor | None) -> list[int]:
    """A tensor's dimensions; none for a lazy layer's tensor, which has no shape until the
    layer's first call (reading it raises)."""
    return [] if t is None or is_lazy(t) else list(t.shape)


def ints(module: nn.Module) -> list[int]:
    """Every whole number the module shows: its own tensors' dimensions and int attributes
    (a width kept as a shape too), then its layers' tensors' dimensions and widths."""
    out: list[int] = []
    for t in [*module._parameters.values(), *module._buffers.values()]:
        out += dims(t)
    for v in vars(module).values():
        if type(v) is int:
            out.append(v)
        elif isinstance(v, tuple) and 0 < len(v) <= 4 and all(type(x) is int for x in v):
            out += list(v)  # a width kept as a shape (normalized_shape = (hidden_size,))
    for m in module.modules():
        for t in m._parameters.values():
            if m is not module:
                out += dims(t)
        for a in _WIDTH_ATTRS:
            v = width(attr(m, a)) if a in m.__dict__ or hasattr(type(m), a) else None
            if type(v) is int:
                out.append(v)
    return out


def sizes(module: nn.Module) -> list[Any]:
    """The kernel sizes, strides, paddings, dilations and image/patch sizes its layers keep (a
    tuple and its first item)."""
    out: list[Any] = []
    for m in module.modules():
        for a in _SIZE_ATTRS:
            v = m.__dict__.get(a)
            if isinstance(v, (int, tuple)) and not isinstance(v, bool):
                out += [v, width(v)] if isinstance(v, tuple) else [v]
    return out


def floats(module: nn.Module) -> list[float]:
    """The module's float attributes, then its layers' epsilons, rates and slopes."""
    out = [v for v in vars(module).values() if type(v) is float]
    for m in module.modules():
        for a in _FLOAT_ATTRS:
            v = m.__dict__.get(a)
            if type(v) is float:
                out.append(v)
    return out


def classes(module: nn.Module) -> list[type]:
    """The class of every layer below the module, in order."""
    return [type(m) for m in module.modules() if m is not module]


def class_rank(name: str) -> Callable[[type], int]:
    """0 for a class named like the parameter (``norm_layer`` and ``BatchNorm2d``; an
    activation for ``act_layer``), 1 for the others."""
    stem = name.removesuffix("_layer").removesuffix("_fn").lower()

    def rank(c: type) -> int:
        low = c.__name__.lower()
        if stem and stem in low or stem == "se" and "excite" in low:
            return 0
        if "act" in stem.split("_") and c.__module__ == "torch.nn.modules.activation":
            return 0
        return 1

    return rank


def annotated(annotation: str) -> Callable[[type], bool]:
    """Whether a class is one the annotation names, or a subclass of one (``block:
    type[Bottleneck]``): such a class is tried first."""

    def named(c: type) -> bool:
        bases = [k.__name__ for k in c.__mro__ if k not in (nn.Module, object)]
        return any(re.search(rf"\b{re.escape(b)}\b", annotation) for b in bases)

    return named if annotation else lambda c: False


def ratios(numbers: list[int]) -> list[float]:
    """Ratios (in quarters) between the module's first few widths: an expansion ratio."""
    widths = list(dict.fromkeys(i for i in numbers if i > 1))[:6]
    out = []
    for a in widths:
        for b in widths:
            if a != b and (a / b) * 4 == int((a / b) * 4):
                out.append(a / b)
    return out
