"""Source: the default. What no other source reads stands at the parameter's default, a guess
(origin "default") the view flags and the search (``_forms/candidates/``) moves first; a required
parameter with no reading stays empty (None). ``*args`` and ``**kwargs`` start empty: torch.nn
classes take them only to ignore them (``Identity``) or to reject them, so theirs are known.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["draft", "spread"]

_MISSING = inspect.Parameter.empty


def spread(param: inspect.Parameter, torch_class: bool) -> tuple[Any, str] | None:
    """``*args`` / ``**kwargs`` empty: known ("derived") for a torch.nn class, a guess for any
    other; None for a named parameter."""
    origin = "derived" if torch_class else "default"
    if param.kind is param.VAR_POSITIONAL:
        return (), origin
    if param.kind is param.VAR_KEYWORD:
        return {}, origin
    return None


def draft(param: inspect.Parameter) -> tuple[Any, str]:
    """The parameter's default (None where it has none), as a guess."""
    return (param.default if param.default is not _MISSING else None), "default"
