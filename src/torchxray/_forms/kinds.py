"""Field kinds: which kind (int, choice, int_or_tuple, class, ...) a constructor parameter is.

Detection is a treescope-style registry: handlers are tried in order and return
``NotImplemented`` to pass, so a caller can put a handler in front for its own annotations.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .values import (
    CALLABLE_CHOICES,
    CLASS_CHOICES,
    callable_label,
)

__all__ = ["KindInfo", "KIND_HANDLERS", "kind_of", "KNOWN_CHOICES", "ann_text"]


@dataclass(frozen=True)
class KindInfo:
    kind: str
    choices: tuple[str, ...] = ()
    optional: bool = False
    # Element type of int_or_tuple / literal sequences ("int" or "float"); None elements allowed.
    elem: str = "int"
    none_elems: bool = False
    # Python values behind `choices` when they are not the labels themselves (Literal[1, 2]).
    values: tuple[Any, ...] = ()


# String options torch documents but does not spell as Literal in signatures. Keyed by
# (class-name suffix or "", parameter name); the first match wins.
KNOWN_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "padding_mode"): ("zeros", "reflect", "replicate", "circular"),
    ("RNNBase", "nonlinearity"): ("tanh", "relu"),
    ("RNNCellBase", "nonlinearity"): ("tanh", "relu"),
    ("KLDivLoss", "reduction"): ("mean", "batchmean", "sum", "none"),
    ("", "reduction"): ("mean", "sum", "none"),
    ("GELU", "approximate"): ("none", "tanh"),
    ("EmbeddingBag", "mode"): ("mean", "sum", "max"),
    ("RNNBase", "mode"): ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"),
    ("Upsample", "mode"): (
        "nearest",
        "linear",
        "bilinear",
        "bicubic",
        "trilinear",
        "area",
        "nearest-exact",
    ),
}

# Strings a "str | int | tuple" padding accepts besides sizes.
PADDING_STRINGS = ("same", "valid")

inspect_empty: Any = inspect.Parameter.empty

KindHandler = Callable[[type, str, Any, Any, Any], "KindInfo | Any"]


def _known_choices(cls: type, name: str) -> tuple[str, ...] | None:
    names = {c.__name__ for c in cls.__mro__}
    for (owner, pname), opts in KNOWN_CHOICES.items():
        if pname == name and (owner == "" or owner in names):
            return opts
    return None


def _union_args(ann: Any) -> tuple[Any, ...] | None:
    origin = typing.get_origin(ann)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(ann)
    return None


def _is_tuple_of(ann: Any, elem: type) -> tuple[bool, bool]:
    """(is a tuple/list/Size of `elem`, allows None elements)."""
    if ann is torch.Size:
        return elem is int, False
    origin = typing.get_origin(ann)
    if origin not in (tuple, list, typing.get_origin(typing.Sequence[int])):
        return False, False
    args = [a for a in typing.get_args(ann) if a is not Ellipsis]
    if not args:
        return False, False
    none_ok = False
    for a in args:
        inner = _union_args(a)
        parts = inner if inner is not None else (a,)
        if type(None) in parts:
            none_ok = True
        if not all(p is elem or p is type(None) for p in parts):
            return False, False
    return True, none_ok


def _by_name(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    if name == "device":
        return KindInfo("device", optional=True)
    if name == "dtype":
        return KindInfo("dtype", optional=True)
    opts = _known_choices(cls, name)
    if opts is not None and _a_string(ann, default, value):
        return KindInfo("choice", opts)
    return NotImplemented


def _a_string(ann: Any, default: Any, value: Any) -> bool:
    """Whether a parameter a known choice is named after holds a string: annotated so, or a
    default or live value that is one; never when either is something else (a user's
    ``reduction=16`` is a squeeze-excite ratio, not a loss's reduction)."""
    seen = [v for v in (default, value) if v is not inspect_empty and v is not None]
    if any(not isinstance(v, str) for v in seen):
        return False
    return ann is str or ann is inspect_empty or isinstance(default, str)


def _literal_enum(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    if typing.get_origin(ann) is typing.Literal:
        args = typing.get_args(ann)
        return KindInfo("choice", tuple(str(a) for a in args), values=args)
    if isinstance(ann, type) and issubclass(ann, enum.Enum):
        return KindInfo("choice", tuple(m.name for m in ann))
    return NotImplemented


def _optional(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    args = _union_args(ann)
    if args is None or type(None) not in args:
        return NotImplemented
    rest = tuple(a for a in args if a is not type(None))
    inner_ann: Any = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
    info = kind_of(cls, name, inner_ann, default, value)
    return KindInfo(info.kind, info.choices, True, info.elem, info.none_elems, info.values)


def _sizes(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    for elem, label in ((int, "int"), (float, "float")):
        ok, none_ok = _is_tuple_of(ann, elem)
        if ok:
            return KindInfo(
                "int_or_tuple" if elem is int else "literal", elem=label, none_elems=none_ok
            )
    args = _union_args(ann)
    if args is None:
        return NotImplemented
    has_str = str in args
    for elem, label in ((int, "int"), (float, "float")):
        tuples = [_is_tuple_of(a, elem) for a in args if a not in (elem, str, list[int])]
        if elem in args and tuples and all(ok for ok, _ in tuples):
            choices = PADDING_STRINGS if has_str and name == "padding" else ()
            kind = "int_or_tuple" if elem is int else "literal"
            return KindInfo(kind, choices, elem=label, none_elems=any(n for _, n in tuples))
    # normalized_shape: int | list[int] | torch.Size; unflattened_size: Size | list | tuple
    if all(a is int or _is_tuple_of(a, int)[0] for a in args):
        return KindInfo("int_or_tuple")
    return NotImplemented


def _returns_module(call_ann: Any) -> bool:
    args = typing.get_args(call_ann)
    ret = args[-1] if args else None
    return isinstance(ret, type) and issubclass(ret, torch.nn.Module)


def _callables(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    args = _union_args(ann) or (ann,)
    calls = [a for a in args if a is Callable or typing.get_origin(a) is Callable]
    is_type = any(a is type or typing.get_origin(a) is type for a in args)
    # torchvision's `norm_layer: Callable[..., nn.Module]` wants a class (or a factory of one).
    # A flag named like a layer (add_pooling_layer=True) gates one; it is no class.
    by_name = name.endswith("_layer") and (bool(calls) or ann is inspect_empty)
    # A number is no class, whatever the name (``n_layer``, a count of layers).
    by_name = by_name and not isinstance(default, bool) and type(value) not in (int, float)
    if is_type or any(_returns_module(a) for a in calls) or by_name or isinstance(value, type):
        return KindInfo("class", tuple(CLASS_CHOICES))
    if calls or (callable(value) and not isinstance(value, torch.nn.Module)):
        labels = tuple(CALLABLE_CHOICES)
        label = callable_label(value)
        if label is not None and label not in labels:
            labels += (label,)
        return KindInfo("callable", labels)
    return NotImplemented


def _tensor(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    # A tensor attribute named like a parameter annotated otherwise (timm's `pos_embed: str`
    # next to its `self.pos_embed` Parameter) is not that parameter's value.
    if ann is torch.Tensor or isinstance(value, torch.Tensor) and ann is inspect_empty:
        return KindInfo("tensor")
    return NotImplemented


def _scalars(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo | Any:
    if ann is int and isinstance(value, tuple):
        return KindInfo("int_or_tuple")  # annotated int, stored expanded (LazyConvTranspose2d)
    # bool before int: bool is an int subclass.
    for t, kind in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
        if ann is t:
            return KindInfo(kind)
    if ann is inspect_empty:
        probe = value if default is None or default is inspect_empty else default
        if type(default) is int and type(value) is float:
            probe = value  # ``dropout=0`` given 0.5: the default's whole number says no more
        optional = default is None
        for t, kind in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str")):
            if type(probe) is t:
                return KindInfo(kind, optional=optional)
        return KindInfo("literal", optional=optional)
    return NotImplemented


def _fallback(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo:
    args = _union_args(ann)
    return KindInfo("literal", optional=default is None or bool(args and type(None) in args))


_BUILTIN_NAMES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str}

KIND_HANDLERS: list[KindHandler] = [
    _literal_enum,
    _by_name,
    _optional,
    _tensor,
    _sizes,
    _callables,
    _scalars,
    _fallback,
]


def kind_of(cls: type, name: str, ann: Any, default: Any, value: Any) -> KindInfo:
    """First handler that does not return ``NotImplemented`` decides the kind."""
    if isinstance(ann, str):
        # A string annotation that could not be resolved: plain builtins still tell the kind.
        ann = _BUILTIN_NAMES.get(ann.strip(), inspect_empty)
    for handler in KIND_HANDLERS:
        try:
            info = handler(cls, name, ann, default, value)
        except TypeError:
            # A handler tripped on an exotic annotation object; let the next one try.
            continue
        if info is not NotImplemented:
            return typing.cast(KindInfo, info)
    return KindInfo("literal")


def ann_text(ann: Any) -> str:
    """An annotation as a form shows it: ``int``, ``torch.nn.modules.module.Module``,
    ``Optional[int]``; "" for none."""
    if ann is inspect_empty:
        return ""
    if isinstance(ann, type):
        return (
            ann.__qualname__
            if ann.__module__ == "builtins"
            else f"{ann.__module__}.{ann.__qualname__}"
        )
    return str(ann).replace("typing.", "")
