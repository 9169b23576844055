"""The records a form is made of: `Field` (one constructor parameter), how one is made from a
parameter and its value (`make_field`), and `FormError`.

Not a stage: every stage of the pipeline (``forms.py``) hands fields down.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._text import short
from .kinds import KindInfo, ann_text, kind_of
from .values import to_text

__all__ = ["Child", "Field", "FormError", "brief", "found", "guessed", "make_field"]

# A layer's own form, handed down by the pipeline (``forms.form``): a reading (a block's
# description) or a rule (a factory for a field) that needs a layer's exact values opens it, a
# route of its own through the stages.
Child = Callable[[Any], Any]

_MISSING = inspect.Parameter.empty


class FormError(ValueError):
    """Bad form values: raised by ``Form.build`` (and ``PatchLog.edit``), naming each field.

    Attributes:
        errors: Field name (``"__init__"`` for the constructor itself) -> a readable message.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> try:
        ...     tx.form(nn.Linear(2, 3)).build(out_features="many")
        ... except tx.FormError as e:
        ...     print(e.errors)
        {'out_features': "out_features: expected an integer, got 'many'"}
    """

    def __init__(self, errors: dict[str, str], cls: type | None = None) -> None:
        self.errors = dict(errors)
        where = f"{cls.__name__}: " if cls is not None else ""
        super().__init__(where + "; ".join(self.errors.values()))


@dataclass(frozen=True, slots=True)
class Field:
    """One constructor parameter of a form, with its current value.

    Attributes:
        name: The parameter's name (``"config.hidden_size"`` for a config's field).
        kind: How the value is read and shown: int, float, bool, str, choice, int_or_tuple,
            dtype, device, class, callable, tensor, literal, config, varargs, varkw.
        value: The current value.
        default: The parameter's default (None where it has none).
        required: The parameter has no default.
        choices: Labels a UI offers (choice, class and callable kinds, or the strings an
            int_or_tuple also accepts, like a conv's "same").
        origin: Where the value comes from: "recorded" (the call was recorded), "attribute" (a
            same-named attribute), "derived" (read another way from the module), "inferred"
            (found and proven by a rebuild that matches the live module) or "default" (a guess
            the view must flag).
        annotation: The parameter's annotation as text.
        text: ``value`` as a UI input shows it; ``Form.parse`` reads it back.
        optional: None is accepted.
        param_kind: ``inspect.Parameter.kind``'s name, for binding.
        group: For a config's field, the config argument (``"config"``); "" otherwise.
        read: For a config's field, whether the class's own code reads it (None: unknown).
        note: Why the value is what it is, when the view should say it.
        rivals: Other values that rebuild the module as exactly as ``value`` (the note names
            them): the value is a guess among them.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> f = tx.form(nn.Conv2d(3, 8, 3, bias=False))["bias"]
        >>> f.kind, f.value, f.origin, f.text
        ('bool', False, 'derived', 'False')
    """

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
    # Values that rebuild the module as exactly (``note`` names them): a parent whose argument
    # was handed to this layer tries them on its own rebuild (``sources/passed.py``).
    rivals: tuple[Any, ...] = ()


def make_field(cls: type, p: inspect.Parameter, value: Any, origin: str) -> tuple[Field, KindInfo]:
    """The field of parameter ``p`` of ``cls`` holding ``value`` (read by ``origin``), with its
    kind (``kinds.py``) and its text (``values.py``)."""
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


def guessed(f: Field) -> bool:
    """Whether the field's value is a guess (a default, or a required value nobody read): what
    the search (``_forms/candidates/``) looks for first."""
    if f.kind in ("varargs", "varkw") or f.name in ("device", "dtype"):
        return False
    return f.origin == "default" or (f.required and f.value is None)


def found(f: Field) -> bool:
    """Whether a form found the field's value: read, or one of several values that rebuild the
    module alike (a guess the note names its rival for: "a guess: 7 rebuilds it ..."), not a
    default left in place. A parent takes such a value from its layer's form as a candidate;
    its own rebuild proves it, or flags it too."""
    return f.origin != "default" or f.note.startswith("a guess")


def brief(exc: BaseException) -> str:
    """An exception's message for a form's error: torch's C++ errors append "Exception raised
    from ..." and a native stack; the sentence is kept."""
    text = str(exc).split("\nException raised from", 1)[0].strip()
    return short(text, 300)
