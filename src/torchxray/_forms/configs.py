"""Config objects: which values are configs (``is_config``) and their literal fields
(``config_items``).

A constructor argument is a config when it is a ``transformers`` config, a dataclass instance, a
``SimpleNamespace`` or any plain object whose public attributes are all literals. Not a stage:
the readings (``_forms/sources/``) look for configs, the parts (``_forms/rebuild/parts.py``)
compare them, and the form (``_forms/form/configs.py``) shows their fields as sub-fields.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import torch

__all__ = ["config_items", "is_config", "is_hf"]

_LITERALS = (bool, int, float, str, type(None))


def _is_literal(value: Any, depth: int = 0) -> bool:
    if isinstance(value, _LITERALS):
        return True
    if depth > 3:
        return False
    if isinstance(value, (tuple, list)):
        return all(_is_literal(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(
            isinstance(k, (str, int)) and _is_literal(v, depth + 1) for k, v in value.items()
        )
    return False


def is_hf(value: Any) -> bool:
    return any(k.__name__ in ("PretrainedConfig", "PreTrainedConfig") for k in type(value).__mro__)


def is_config(value: Any) -> bool:
    """A config-like object whose attributes a form can show as fields."""
    if value is None or isinstance(value, (type, torch.nn.Module, torch.Tensor, *_LITERALS)):
        return False
    if isinstance(value, (tuple, list, dict, set, frozenset)) or callable(value):
        return False
    if is_hf(value) or isinstance(value, types.SimpleNamespace):
        return True
    if dataclasses.is_dataclass(value):
        return True
    attrs = _public(value)
    return bool(attrs) and all(_is_literal(v) for v in attrs.values())


def _public(value: Any) -> dict[str, Any]:
    try:
        return {k: v for k, v in vars(value).items() if not k.startswith("_")}
    except TypeError:  # __slots__ objects and the like have no __dict__
        return {}


def config_items(value: Any) -> dict[str, Any]:
    """The config's literal fields by name (nested configs and objects are left out)."""
    if is_hf(value):
        try:
            raw = value.to_dict()
        except Exception:  # noqa: BLE001 - a config subclass whose to_dict fails: read attributes
            raw = _public(value)
        names = [k for k in raw if not k.startswith("_")]
    elif dataclasses.is_dataclass(value):
        names = [f.name for f in dataclasses.fields(value) if not f.name.startswith("_")]
    else:
        names = list(_public(value))
    out: dict[str, Any] = {}
    for name in names:
        try:
            v = getattr(value, name)
        except Exception:  # noqa: BLE001 - a property that raises is not a field
            continue
        if _is_literal(v):
            out[name] = v
    return out
