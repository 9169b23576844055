"""What a config argument's annotation and lookups say of it, for ``nested.py``: a plain dict
(``cfg: dict``, ``Mapping[str, Any]``) read by its keys, a class made from keywords alone
(``argparse.Namespace``, ``SimpleNamespace``, an ``EasyDict``) read by its fields as any
namespace, and the keys of the module's table a field is looked up in (``ACTS[args.act]``).

An annotation that names a class usually means a config class whose constructor names its
fields (``nested.config_class``); these name none, so the constructor's reads say what they
hold, as where nothing annotates the argument.
"""

from __future__ import annotations

import inspect
import types

import torch
from torch import nn

from ..._signature import resolve
from .keyed import reads_at, table_keys

__all__ = ["bag", "dict_annotation", "looked_up"]

_DICTS = ("dict", "Dict", "typing.Dict", "Mapping", "typing.Mapping", "collections.abc.Mapping")


def dict_annotation(text: str) -> bool:
    """``dict``, ``dict[str, Any]``, ``Dict``, ``Mapping[str, int]``, optional or not."""
    for prefix in ("Optional[", "typing.Optional["):
        if text.startswith(prefix) and text.endswith("]"):
            text = text[len(prefix) : -1]
    text = text.replace(" | None", "").replace("None | ", "")
    return text.partition("[")[0] in _DICTS


def bag(cls: type, name: str) -> bool:
    """Whether the parameter is annotated a class made from keywords alone (see the module
    doc): a namespace by another name, whose fields its constructor names nowhere."""
    try:
        ann = resolve(cls).parameters[name].annotation
    except (TypeError, ValueError, KeyError):
        return False
    if ann is types.SimpleNamespace:
        return True  # a builtin: no signature to read
    if not isinstance(ann, type) or issubclass(ann, (nn.Module, torch.Tensor)):
        return False
    try:
        ps = list(inspect.signature(ann).parameters.values())
    except (TypeError, ValueError):
        return False
    return bool(ps) and all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps)


def looked_up(readers: list[tuple[type, str, tuple[str, ...]]]) -> tuple[str, ...]:
    """``ACTS[args.act]``: the keys of the module's table the field the readers read (class,
    parameter, path) is looked up in, or ()."""
    for r in readers:
        at = reads_at(*r)
        if at is not None and (keys := table_keys(*at)):
            return keys
    return ()
