"""Form values to constructor arguments: ``bind(signature, fields, values)``, the one place that
decides what is passed positionally, by keyword, or left to the class's default."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from .field import Field
from .values import same

__all__ = ["bind"]


def bind(
    signature: inspect.Signature, fields: Sequence[Field], values: dict[str, Any]
) -> inspect.BoundArguments:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = any(f.kind == "varargs" and values.get(f.name) for f in fields)
    for f in fields:
        if f.group:
            continue  # config sub-fields reach the constructor inside their config
        v = values.get(f.name)
        if f.kind == "varargs":
            args.extend(v or ())
            continue
        if f.kind == "varkw":
            kwargs.update(v or {})
            continue
        if f.param_kind == "POSITIONAL_ONLY" or (
            positional and f.param_kind == "POSITIONAL_OR_KEYWORD"
        ):
            args.append(v)
            continue
        if not f.required and same(v, f.default):
            continue  # leave defaults to the class: identical, and robust to sentinels
        kwargs[f.name] = v
    kwargs.update(values.get("**", {}))
    return signature.bind(*args, **kwargs)
