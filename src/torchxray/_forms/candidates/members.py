"""Arguments that are dataclasses of values (a set of layer factories, a block's cfg): their
members as fields of their own, so that the search's rules (``rules/``) read a difference
as a change of one member, made on a copy (``dataclasses.replace``).

A field left at None whose annotation is a dataclass the constructor fills in itself
(``layers = layers or LayerFn()``) stands for that dataclass made with its defaults.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any

from ..field import Field

__all__ = ["Nested", "nested"]


@dataclass
class Nested:
    """The members of field ``parent``'s dataclass ``obj``: one field each, named by the member,
    with its value in ``values``."""

    parent: str
    obj: Any
    fields: list[Field]
    values: dict[str, Any]

    def change(self, members: dict[str, Any]) -> dict[str, Any] | None:
        """The parent field's change that sets the ``members`` (name -> value); None if it
        cannot be."""
        try:
            return {self.parent: dataclasses.replace(self.obj, **members)}
        except Exception:  # noqa: BLE001 - a __post_init__ that rejects the value
            return None


def _dataclass_of(ann: Any) -> type | None:
    """The dataclass an annotation names (``LayerFn``, ``Optional[LayerFn]``), if any."""
    options = typing.get_args(ann) if typing.get_origin(ann) is typing.Union else (ann,)
    for a in options:
        if isinstance(a, type) and dataclasses.is_dataclass(a):
            return a
    return None


def _model_config(value: Any) -> bool:
    """A model's whole config (transformers' are dataclasses too): the search tries the configs
    of the model around the module instead (``_forms/sources/pools.py``), not one member at a
    time."""
    return any(k.__name__ in ("PretrainedConfig", "PreTrainedConfig") for k in type(value).__mro__)


def _default_instance(kind: type) -> Any:
    try:
        return kind()
    except Exception:  # noqa: BLE001 - a dataclass with required members has no default one
        return None


def _kind(value: Any, ann: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (type, functools.partial)) or callable(value):
        return "class"
    if value is None and ("Callable" in str(ann) or "Type" in str(ann) or "type[" in str(ann)):
        return "class"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, tuple) and value and all(type(x) is int for x in value):
        return "int_or_tuple"
    return "literal"


def _member(m: dataclasses.Field[Any], value: Any) -> Field:
    default = m.default if m.default is not dataclasses.MISSING else None
    return Field(
        name=m.name,
        kind=_kind(value, m.type),
        value=value,
        default=default,
        required=False,
        choices=(),
        origin="default",
        annotation=str(m.type),
        text="",
        optional=default is None,
    )


def nested(sig: inspect.Signature, fields: list[Field], values: dict[str, Any]) -> list[Nested]:
    """One ``Nested`` per field whose value is a dataclass instance, or None where the
    parameter's annotation (in the constructor's ``sig``) is a dataclass that can be made with
    its defaults."""
    out: list[Nested] = []
    params = sig.parameters
    for f in fields:
        v = values.get(f.name)
        if v is None and f.kind not in ("varargs", "varkw"):
            p = params.get(f.name)
            kind = _dataclass_of(p.annotation) if p is not None else None
            v = _default_instance(kind) if kind is not None else None
        if v is None or isinstance(v, type) or not dataclasses.is_dataclass(v) or _model_config(v):
            continue
        members = [m for m in dataclasses.fields(v) if m.init]
        got = {m.name: getattr(v, m.name, None) for m in members}
        out.append(Nested(f.name, v, [_member(m, got[m.name]) for m in members], got))
    return out
