"""The form a person sees and edits (``Form``): its fields with their values and texts, and
what it does with an edit: ``parse`` a field's text, ``validate`` and ``build`` with changes
(``bind.py`` decides what is passed how), ``changed`` (which changes are no change at all).

Stage 5 of a form (``forms.py`` runs the stages) makes it (``_forms/form/__init__.py``).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..._text import closest
from ..bind import bind
from ..configs import is_config
from ..field import Field, FormError, brief
from ..kinds import KindInfo
from ..rebuild.compare import Check
from ..record import remember, snapshot
from ..validate import check_range, check_type
from ..values import ParseError, expected, loose, parse
from .configs import with_changes
from .unchanged import changed

__all__ = ["Form", "Gate"]

_READ = ("recorded", "attribute", "inferred")

# The gate of a form not searched (``_forms/exact/gate.py``), handed in by the pipeline: it
# builds the form unchanged and compares it with the live module when first asked.
Gate = Callable[["Form", nn.Module], Check]


class Form:
    """The constructor fields of one class, with the live module's current values; ``build``
    makes a new module from them with changes. Made by ``tx.form`` (never directly).

    Attributes:
        cls: The class the form rebuilds (the user's class behind a parametrized one).
        signature: The constructor's signature, ``self`` dropped (``inspect.Signature``).
        fields: One ``Field`` per parameter, in the constructor's order; a config argument is
            followed by one sub-field per config field (``"config.hidden_size"``).
        hint: Why some values are missing or guessed and how to get exact ones; "" when all are
            known.
        module: The live module the values were read from; None for a class's form.

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> f = tx.form(nn.Linear(4, 8, bias=False))
        >>> f.cls.__name__, [x.name for x in f.fields][:3]
        ('Linear', ['in_features', 'out_features', 'bias'])
        >>> f["out_features"].value, f.inexact
        (8, '')
        >>> f.build(out_features=16)
        Linear(in_features=4, out_features=16, bias=False)
    """

    def __init__(
        self,
        cls: type,
        sig: inspect.Signature,
        fields: tuple[Field, ...],
        infos: dict[str, KindInfo],
        hint: str = "",
        module: nn.Module | None = None,
        check: Check | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.cls = cls
        # The live module the values were read from (None for a class's form): the gate compares
        # the unchanged rebuild with it.
        self.module = module
        # The exact check's answer (stage 4), or the gate that gives it when first asked.
        self._check = check
        self._gate = gate
        self.signature = sig
        self.fields = fields
        self._infos = infos
        self._by_name = {f.name: f for f in fields}
        # Why some values are missing or guessed, and how to get exact ones; "" when all are known.
        self.hint = hint

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={f.text}" for f in self.fields if not f.group)
        return f"Form({self.cls.__name__}: {inner})"

    def __getitem__(self, name: str) -> Field:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(self._unknown(name)) from None

    @property
    def check(self) -> Check:
        """The exactness gate's answer (``_forms/exact/``): for a searched form, decided when it
        was opened; for any other, run once on first use: the unchanged rebuild, built on meta,
        compared with the live module part by part.

        Returns:
            A ``Check``: ``reason`` ("" when exact, else the sentence ``inexact`` gives), the
            parts that differ (``diffs``), whether only tensor types differ (``typed``).

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Conv2d(3, 8, 3)).check.reason
            ''
        """
        if self._check is None:
            gate = self._gate
            self._check = (
                Check("") if self.module is None or gate is None else gate(self, self.module)
            )
        return self._check

    @property
    def inexact(self) -> str:
        """ "" when ``build()`` with no change reproduces the live module exactly (every
        submodule's class and extra_repr, parameter and buffer names, shapes and dtypes, the
        attributes its constructor set, the types of its tensors); else one sentence: "inexact:
        norm1 would be GroupNorm(32, 32), the live one is GroupNorm(8, 32)". ``PatchLog.edit``
        refuses an inexact form's edit unless ``_inexact_ok=True``, but for tensor types alone
        (a quantized weight, ``check.typed``): the edit carries those tensors over.

        Returns:
            "" or the sentence.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> class Narrow(nn.Module):
            ...     def __init__(self, tag: str = "wide") -> None:
            ...         super().__init__()
            ...         self.norm = nn.GroupNorm(8 if len(tag) == 6 else 32, 32)
            >>> tx.form(Narrow(tag="narrow")).inexact[:60]
            'inexact: norm would be GroupNorm(32, 32, eps=1e-05, affine=T'
        """
        return self.check.reason

    @property
    def values(self) -> dict[str, Any]:
        """The current value of every field, by name (config sub-fields under their dotted name).

        Returns:
            ``{name: value}`` in the fields' order.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Dropout(0.25)).values
            {'p': 0.25, 'inplace': False}
        """
        return {f.name: f.value for f in self.fields}

    def _unknown(self, name: str) -> str:
        close = closest(name, self._by_name)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        known = ", ".join(self._by_name) or "(none)"
        return f"{name}: {self.cls.__name__} has no parameter {name!r}{hint} (fields: {known})"

    def parse(self, name: str, text: str) -> Any:
        """The value UI ``text`` means for field ``name``; the field's own text gives its
        current value back (a module, a big tensor: values text cannot express).

        Args:
            name: A field's name.
            text: What a person typed (``"(3, 3)"``, ``"torch.float16"``, ``"None"``).

        Returns:
            The value, of the field's kind.

        Raises:
            FormError: The text does not read as the field's kind (the message says what was
                expected); KeyError: no such field.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Conv2d(3, 8, 3)).parse("kernel_size", "(5, 5)")
            (5, 5)
        """
        f = self[name]
        if text.strip() == f.text.strip():
            # Unchanged input keeps values that text cannot express (modules, big tensors).
            return f.value
        return self.parse_text(name, text)

    def parse_text(self, name: str, text: str) -> Any:
        """Like ``parse``, but always reads ``text``, even when it equals the field's own text.

        Args:
            name: A field's name.
            text: What a person typed.

        Returns:
            The value ``text`` reads as.

        Raises:
            FormError: The text does not read as the field's kind.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Linear(2, 3)).parse_text("bias", "False")
            False
        """
        f = self[name]
        info = self._infos[name]
        enum_cls = f.value.__class__ if isinstance(f.value, enum.Enum) else None
        if enum_cls is None and isinstance(f.default, enum.Enum):
            enum_cls = f.default.__class__
        try:
            value = parse(
                info.kind,
                text,
                optional=info.optional,
                choices=info.choices,
                elem=info.elem,
                none_elems=info.none_elems,
                enum_cls=enum_cls,
            )
        except ParseError as e:
            raise FormError({name: f"{name}: {e}"}, self.cls) from None
        if info.values and isinstance(value, str) and value in info.choices:
            value = info.values[info.choices.index(value)]
        if isinstance(value, torch.Tensor) and isinstance(f.value, torch.Tensor):
            value = value.to(dtype=f.value.dtype, device=f.value.device)
        return value

    def _resolve(self, changes: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        values = self.values
        errors: dict[str, str] = {}
        changes = self._spread(changes)
        edited: dict[str, dict[str, Any]] = {}  # config argument -> {its field: new value}
        has_varkw = any(f.kind == "varkw" for f in self.fields)
        for name, raw in changes.items():
            if name not in self._by_name:
                if has_varkw:
                    values.setdefault("**", {})[name] = loose(raw)
                    continue
                errors[name] = self._unknown(name)
                continue
            f = self._by_name[name]
            # UI text is parsed per kind; a str field takes text as is (unless "None" may mean None).
            if isinstance(raw, str) and (f.kind != "str" or f.optional or raw == f.text):
                try:
                    value = self.parse(name, raw)
                except FormError as e:
                    errors[name] = e.errors[name]
                    continue
            else:
                value = raw
            # The module's own current value needs no check (a UI may send every field back).
            unchanged = value is f.value
            msg = None if unchanged else check_type(f, self._infos[name], value)
            msg = msg or (None if unchanged else self._range(f, value))
            if msg:
                errors[name] = msg
                continue
            values[name] = value
            if f.group and not unchanged:
                edited.setdefault(f.group, {})[name.split(".", 1)[1]] = value
        for group, sets in edited.items():
            if group not in errors:
                try:
                    values[group] = with_changes(values[group], sets)
                except Exception as e:  # noqa: BLE001 - a config that validates its fields
                    for key in sets:
                        errors[f"{group}.{key}"] = f"{group}.{key}: {brief(e)}"
        for f in self.fields:
            if (
                f.required
                and values.get(f.name) is None
                and not f.optional
                and f.name not in errors
                # None read from the module (recorded, an attribute) is the value it was given.
                and not (f.origin in _READ and f.value is None and f.name not in changes)
            ):
                errors[f.name] = f"{f.name}: required, expected {expected(f.kind)}, got nothing"
        return values, errors

    def _spread(self, changes: dict[str, Any]) -> dict[str, Any]:
        """A dict given for a config argument means its fields: {"config": {"x": 1}} is
        {"config.x": 1}."""
        out: dict[str, Any] = {}
        for name, raw in changes.items():
            f = self._by_name.get(name)
            if f is not None and f.kind == "config" and isinstance(raw, str):
                raw = loose(raw) if raw.strip() != f.text.strip() else f.value
            if f is not None and f.kind == "config" and isinstance(raw, dict):
                out.update({f"{name}.{k}": v for k, v in raw.items()})
            elif f is not None and f.kind == "config" and not is_config(raw):
                out[name] = raw  # check_type below names what was expected
            else:
                out[name] = raw
        return out

    def changed(self, **changes: Any) -> dict[str, Any]:
        """The subset of ``changes`` whose parsed value differs from the live one (``"(2,2)"``
        for ``(2, 2)`` changes nothing); values that do not parse are kept for ``validate``.

        Args:
            **changes: Field name -> new value or UI text.

        Returns:
            The changes that change something.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Conv2d(3, 8, 3)).changed(kernel_size="(3,3)", stride="2")
            {'stride': '2'}
        """
        return changed(self, changes)

    def _range(self, f: Field, value: Any) -> str | None:
        if not f.group:
            return check_range(self.cls, f, value)
        leaf = f.name.split(".", 1)[1]
        msg = check_range(self.cls, dataclasses.replace(f, name=leaf), value)
        return None if msg is None else f"{f.group}." + msg

    def validate(self, **changes: Any) -> dict[str, str]:
        """Check ``changes`` without building anything.

        Args:
            **changes: Field name -> new value or UI text (a config's fields as
                ``**{"config.num_attention_heads": 8}``).

        Returns:
            ``{field: message}`` for every change (or missing required field) that would fail;
            ``{}`` when ``build`` would get as far as the constructor.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.Conv2d(3, 8, 3)).validate(out_channels="abc", stride=0)
            {'out_channels': "out_channels: expected an integer, got 'abc'", 'stride': 'stride: expected a size >= 1, got 0'}
        """
        values, errors = self._resolve(changes)
        if errors:
            return errors
        try:
            self._bind(values)
        except TypeError as e:
            return {"__init__": f"arguments do not fit {self.cls.__name__}: {e}"}
        return {}

    def _bind(self, values: dict[str, Any]) -> inspect.BoundArguments:
        return bind(self.signature, self.fields, values)

    def build(self, **changes: Any) -> nn.Module:
        """A new module from the current values plus ``changes``; the live module is untouched.

        Args:
            **changes: Field name -> new value or UI text.

        Returns:
            A new module of the form's class (its constructor's own fresh weights).

        Raises:
            FormError: A change does not fit its field, or the constructor raised; ``errors``
                maps each field (``"__init__"`` for the constructor) to a message.

        Examples:
            >>> import torch.nn as nn, torchxray as tx
            >>> tx.form(nn.GRU(8, 16)).build(num_layers=2)
            GRU(8, 16, num_layers=2)
        """
        values, errors = self._resolve(changes)
        if errors:
            raise FormError(errors, self.cls)
        try:
            bound = self._bind(values)
        except TypeError as e:
            raise FormError(
                {"__init__": f"arguments do not fit {self.cls.__name__}: {e}"}, self.cls
            ) from e
        kept = snapshot(bound.args, bound.kwargs)  # the record, safe from a mutating constructor
        try:
            args, kwargs = snapshot(bound.args, bound.kwargs)
            new = typing.cast(nn.Module, self.cls(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - any constructor failure becomes a form error
            msg = f"{self.cls.__name__}(...) raised {type(e).__name__}: {brief(e)}"
            errors = {"__init__": msg}
            # One config field changed: the message belongs next to it too.
            edited = [k for k in changes if k in self._by_name and self._by_name[k].group]
            if len(edited) == 1:
                errors[edited[0]] = f"{edited[0]}: {msg}"
            raise FormError(errors, self.cls) from e
        if type(new) is self.cls and not self.cls.__module__.startswith("torch."):
            # User classes often keep no attributes named after their parameters: remembering
            # makes the rebuilt module's form exact (a second edit must not fall back to guesses).
            # torch.nn classes are fully recoverable and keep canonical values (kernel_size
            # (5, 5), not the 5 that was passed).
            remember(new, *kept)
        return new
