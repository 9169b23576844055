"""Source: the recorded call. A module built while recording (``tx.record_everything()``,
``%load_ext torchxray``, ``with tx.record_init_args():``) or rebuilt by a form (``Form.build``
remembers what it passed) has its constructor's arguments on record (``_forms/record.py``):
every parameter's value is known, and the form needs no search.
"""

from __future__ import annotations

import inspect
from typing import Any

from torch import nn

from ..record import recorded_args, recorded_notes

__all__ = ["draft", "notes", "read"]

_MISSING = inspect.Parameter.empty


def read(module: nn.Module, sig: inspect.Signature) -> inspect.BoundArguments | None:
    """The module's recorded arguments bound to ``sig``; None without a record, or when the
    record does not fit the signature (a class changed since)."""
    rec = recorded_args(module)
    if rec is None:
        return None
    try:
        return sig.bind(*rec[0], **rec[1])
    except TypeError:
        return None


def draft(recorded: inspect.BoundArguments, param: inspect.Parameter) -> tuple[Any, str]:
    """The parameter's value as the call passed it (the default where it passed none)."""
    if param.name in recorded.arguments:
        return recorded.arguments[param.name], "recorded"
    if param.kind is param.VAR_POSITIONAL:
        return (), "recorded"
    if param.kind is param.VAR_KEYWORD:
        return {}, "recorded"
    return (param.default if param.default is not _MISSING else None), "recorded"


def notes(module: nn.Module) -> dict[str, str]:
    """Per argument, why its record is the live object rather than a copy."""
    return recorded_notes(module)
