"""The records a form is made of: `Field` (one constructor parameter) and `FormError`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Field", "FormError"]


class FormError(ValueError):
    """Bad form values; ``errors`` maps each field name to a readable message."""

    def __init__(self, errors: dict[str, str], cls: type | None = None) -> None:
        self.errors = dict(errors)
        where = f"{cls.__name__}: " if cls is not None else ""
        super().__init__(where + "; ".join(self.errors.values()))


@dataclass(frozen=True, slots=True)
class Field:
    """One constructor parameter. ``origin``: attribute / derived / recorded / inferred (checked
    by a meta-device build that matches the live module) / default (a guess the view must flag). ``text`` is ``value`` as a UI input shows it; ``Form.parse`` reads it
    back. ``choices`` are labels (choice, class, callable kinds, or the strings an int_or_tuple
    also accepts, like a conv's "same")."""

    name: str
    kind: str
    value: Any
    default: Any
    required: bool
    choices: tuple[str, ...]
    origin: str
    annotation: str
    text: str
    optional: bool
    # Parameter.kind name (POSITIONAL_ONLY, VAR_POSITIONAL, KEYWORD_ONLY, ...), for binding.
    param_kind: str = "POSITIONAL_OR_KEYWORD"
    # Sub-fields of a config argument: ``group`` is the argument ("config"), ``name`` is dotted
    # ("config.hidden_size"); ``read`` says whether the class's own code reads it (None: unknown).
    group: str = ""
    read: bool | None = None
    # Why the value is what it is, when the view should say it (an argument kept uncopied, ...).
    note: str = ""
