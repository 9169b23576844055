"""Guessed fields replaced by values a meta build confirms (``fill``): the search of
``_forms/infer.py`` run over a form's draft fields, or the hint that says why it failed."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import torch
from torch import nn

from .bind import bind
from .check import check_type
from .field import Field
from .infer import guessed, infer
from .kinds import KindInfo
from .make import make_field, same
from .record import snapshot

__all__ = ["fill"]

_SCALARS = ("int", "float", "bool", "int_or_tuple")


def fill(
    module: nn.Module,
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    infos: dict[str, KindInfo],
) -> str:
    """Replace guessed fields (in place) by values a meta build confirms; the hint otherwise."""
    if not any(guessed(f) for f in fields):
        return ""
    base = {f.name: f.value for f in fields}
    if "device" in base:
        base["device"] = torch.device("meta")  # an explicit device would beat the meta context

    def make(changes: dict[str, Any]) -> nn.Module:
        bound = bind(sig, fields, {**base, **changes})
        # Copies: a constructor may set fields of the config it is given (T5Stack's use_cache),
        # and the candidates are the live model's own objects.
        args, kwargs = snapshot(bound.args, bound.kwargs)
        return typing.cast(nn.Module, cls(*args, **kwargs))

    def fits(f: Field, value: Any) -> bool:
        return check_type(f, infos[f.name], value) is None

    found = infer(module, fields, fits, make)
    if not found.exact:
        # A same-named attribute may hold a transformed value (num_scales - 1): search those too.
        stored = frozenset(f.name for f in fields if f.origin == "attribute" and f.kind in _SCALARS)
        found = infer(module, fields, fits, make, stored) if stored else found
    if found.exact:
        for i, f in enumerate(fields):
            if f.name not in found.values:
                continue
            value = found.values[f.name]
            # A default the build agrees with may still be wrong (a value that shapes nothing):
            # it stays a guess; only a value the search had to find is "inferred".
            if f.required or not same(value, f.default):
                fields[i], infos[f.name] = make_field(
                    cls, sig.parameters[f.name], value, "inferred"
                )
        return ""
    unknown = [f.name for f in fields if guessed(f)]
    return (
        f"{cls.__name__} keeps no attribute for {', '.join(unknown)}, and {found.reason}: "
        "required ones stay empty, the others show their defaults. Build the model inside "
        "`with tx.record_init_args():` to get exact forms."
    )
