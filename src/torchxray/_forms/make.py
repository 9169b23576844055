"""One field per constructor parameter: its current value (``current``) and its record
(``make_field``): kind, text, origin. ``forms.form`` puts them together."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import Any

import torch
from torch import nn

from .._text import short
from .field import Field
from .kinds import KindInfo, kind_of
from .recover import tensor_device_dtype
from .signature import ann_text
from .values import to_text

__all__ = ["brief", "current", "loose", "make_field", "same"]

_MISSING = inspect.Parameter.empty


def current(
    module: nn.Module,
    param: inspect.Parameter,
    derived: dict[str, Any],
    recorded: inspect.BoundArguments | None,
) -> tuple[Any, str]:
    name = param.name
    if recorded is not None and name in recorded.arguments:
        return recorded.arguments[name], "recorded"
    if recorded is not None:
        if param.kind is param.VAR_POSITIONAL:
            return (), "recorded"
        if param.kind is param.VAR_KEYWORD:
            return {}, "recorded"
        return (param.default if param.default is not _MISSING else None), "recorded"
    if name in derived:
        return derived[name], "derived"
    if name in ("device", "dtype"):
        device, dtype = tensor_device_dtype(module)
        return (device if name == "device" else dtype), "derived"
    # torch.nn classes take *args/**kwargs only to ignore them (Identity) or to reject them.
    ignored = "derived" if type(module).__module__.startswith("torch.nn") else "default"
    if param.kind is param.VAR_POSITIONAL:
        return (), ignored
    if param.kind is param.VAR_KEYWORD:
        return {}, ignored
    guess = (param.default if param.default is not _MISSING else None), "default"
    try:
        attr = getattr(module, name)
    except Exception:  # noqa: BLE001 - missing, or a property that raises: fall back to a guess
        return guess
    wants_bool = param.annotation is bool or isinstance(param.default, bool)
    if (isinstance(attr, torch.Tensor) or attr is None) and wants_bool:
        return attr is not None, "derived"
    wants_number = param.annotation in (float, int) or type(param.default) in (float, int)
    if isinstance(attr, nn.Module) and (wants_number or "drop" in name):
        # `self.dropout = nn.Dropout(dropout)`: the number lives on the submodule (``p``, or a
        # drop path's ``drop_prob``); `DropPath(rate) if rate > 0 else Identity()` keeps none.
        p = getattr(attr, "p", getattr(attr, "drop_prob", None))
        if type(p) in (int, float) and "drop" in name:
            return p, "derived"
        if "drop" in name and param.default is _MISSING and p is None:
            return 0.0, "default"  # a first guess the search goes on from
        return guess
    if isinstance(attr, nn.Module) and isinstance(param.default, (tuple, list, str, bool)):
        # A layer made from a plain default (``downsample=('', 1)`` made `self.downsample`) is
        # not the argument: a guess the search goes on from.
        return guess
    if callable(attr) and inspect.ismethod(attr):
        return (param.default if param.default is not _MISSING else None), "default"
    return attr, "attribute"


def make_field(cls: type, p: inspect.Parameter, value: Any, origin: str) -> tuple[Field, KindInfo]:
    default = None if p.default is _MISSING else p.default
    if p.kind is p.VAR_POSITIONAL:
        info = KindInfo("varargs")
    elif p.kind is p.VAR_KEYWORD:
        info = KindInfo("varkw")
    else:
        info = kind_of(cls, p.name, p.annotation, p.default, value)
        if value is None and not info.optional and p.default is not _MISSING:
            info = dataclasses.replace(info, optional=True)
    if info.kind == "choice" and isinstance(value, str) and value not in info.choices:
        # A value this torch version accepts but our list lacks: offer it rather than reject it.
        info = dataclasses.replace(info, choices=(*info.choices, value))
    required = p.default is _MISSING and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    f = Field(
        name=p.name,
        kind=info.kind,
        value=value,
        default=default,
        required=required,
        choices=info.choices,
        origin=origin,
        annotation=ann_text(p.annotation),
        text=to_text(info.kind, value),
        optional=info.optional,
        param_kind=p.kind.name,
    )
    return f, info


def loose(raw: Any) -> Any:
    """A **kwargs value from a UI: a literal if it reads as one, else the string itself."""
    if not isinstance(raw, str):
        return raw
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, (bool, int, float, str, tuple, type(None))) and type(a) is type(b):
        try:
            return bool(a == b)
        except Exception:  # noqa: BLE001
            return False
    return False


def brief(exc: BaseException) -> str:
    # torch's C++ errors append "Exception raised from ..." and a native stack: keep the sentence.
    text = str(exc).split("\nException raised from", 1)[0].strip()
    return short(text, 300)
