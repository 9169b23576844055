"""Hyperparameter forms: ``form(module_or_class) -> Form`` with one ``Field`` per constructor
parameter, current values recovered from the live module, and ``Form.build(**changes)``.

    >>> import torch.nn as nn
    >>> f = form(nn.Conv2d(3, 8, 3, stride=2, bias=False))
    >>> f["bias"].value, f["bias"].origin, f["stride"].text
    (False, 'derived', '(2, 2)')
    >>> f.build(out_channels="16")
    Conv2d(3, 16, kernel_size=(3, 3), stride=(2, 2), bias=False)
    >>> f.validate(out_channels="abc")
    {'out_channels': "out_channels: expected an integer, got 'abc'"}

Kinds come from a handler list (``_forms.kinds.KIND_HANDLERS``), derived values from a class
registry searched along ``__mro__`` (``_forms.recover.RECOVERERS``); see those modules.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import time
import typing
from typing import Any

import torch
from torch import nn

from ._forms import exact, unchanged, warmup
from ._forms.bind import bind
from ._forms.check import check_range, check_type
from ._forms.config import expand, is_config, with_changes
from ._forms.field import Field, FormError
from ._forms.fill import fill
from ._forms.kinds import KindInfo
from ._forms.make import brief, current, loose, make_field
from ._forms.metabuild import live_writes
from ._forms.record import (
    record_everything,
    record_init_args,
    recorded_args,
    recorded_notes,
    remember,
    snapshot,
)
from ._forms.recover import derived_values
from ._forms.signature import signature
from ._forms.values import ParseError, expected, parse
from ._text import closest
from ._trace.scope import untouched
from ._unwrap import original_class

__all__ = ["Field", "Form", "FormError", "form", "record_everything", "record_init_args"]

_MISSING = inspect.Parameter.empty
_READ = ("recorded", "attribute", "inferred")


class Form:
    """Constructor fields of one class, with current values; ``build`` makes a new module."""

    def __init__(
        self,
        cls: type,
        sig: inspect.Signature,
        fields: tuple[Field, ...],
        infos: dict[str, KindInfo],
        hint: str = "",
        module: nn.Module | None = None,
    ) -> None:
        self.cls = cls
        # The live module the values were read from (None for a class's form): the gate compares
        # the unchanged rebuild with it.
        self.module = module
        self._check: exact.Check | None = None
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
    def check(self) -> exact.Check:
        """The exactness gate (``_forms/exact.py``), run once on first use: the unchanged rebuild,
        built on meta, compared with the live module part by part."""
        if self._check is None:
            self._check = exact.Check("") if self.module is None else exact.check(self, self.module)
        return self._check

    @property
    def inexact(self) -> str:
        """ "" when ``build()`` with no change reproduces the live module exactly (every
        submodule's class and extra_repr, parameter and buffer names, shapes and dtypes, the
        attributes its constructor set, the types of its tensors); else one sentence: "inexact:
        norm1 would be GroupNorm(32, 32), the live one is GroupNorm(8, 32)". ``PatchLog.edit``
        refuses an inexact form's edit unless ``_inexact_ok=True``, but for tensor types alone
        (a quantized weight, ``check.typed``): the edit carries those tensors over."""
        return self.check.reason

    @property
    def values(self) -> dict[str, Any]:
        return {f.name: f.value for f in self.fields}

    def _unknown(self, name: str) -> str:
        close = closest(name, self._by_name)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        known = ", ".join(self._by_name) or "(none)"
        return f"{name}: {self.cls.__name__} has no parameter {name!r}{hint} (fields: {known})"

    def parse(self, name: str, text: str) -> Any:
        """Value of UI `text` for field `name`; raises FormError naming the field."""
        f = self[name]
        if text.strip() == f.text.strip():
            # Unchanged input keeps values that text cannot express (modules, big tensors).
            return f.value
        return self.parse_text(name, text)

    def parse_text(self, name: str, text: str) -> Any:
        """Like ``parse`` but always reads `text`, even when it equals the field's own text."""
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
        for ``(2, 2)`` changes nothing); values that do not parse are kept for ``validate``."""
        return unchanged.changed(self, changes)

    def _range(self, f: Field, value: Any) -> str | None:
        if not f.group:
            return check_range(self.cls, f, value)
        leaf = f.name.split(".", 1)[1]
        msg = check_range(self.cls, dataclasses.replace(f, name=leaf), value)
        return None if msg is None else f"{f.group}." + msg

    def validate(self, **changes: Any) -> dict[str, str]:
        """{field: message} for every change (or missing required field) that would fail."""
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
        """A new module from the current values plus `changes` (values or UI strings)."""
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


def form(module_or_class: nn.Module | type) -> Form:
    """Form for a module instance (current values) or a class (defaults). The live module is
    left as found: the check hands its layers to the constructor it rebuilds with, and a
    constructor may change a layer it is given (`_trace.scope`)."""
    if isinstance(module_or_class, nn.Module):
        warmup.warm()  # torch's one-time meta warm-up is not the form's time (``_forms/warmup.py``)
        with untouched(module_or_class, guard=False) as trace:
            with live_writes(trace.backups.before_write):
                return _form(module_or_class)
    return _form(module_or_class)


def _form(module_or_class: nn.Module | type) -> Form:
    started = time.thread_time()
    if isinstance(module_or_class, type):
        if not issubclass(module_or_class, nn.Module):
            raise TypeError(
                f"form() expects an nn.Module or an nn.Module subclass, "
                f"got the class {module_or_class.__qualname__}"
            )
        cls, module = module_or_class, None
    elif isinstance(module_or_class, torch.jit.ScriptModule):
        raise TypeError(
            "form() needs a Python nn.Module; a ScriptModule has no Python constructor to "
            "rebuild from (use the module you scripted)"
        )
    elif isinstance(module_or_class, nn.Module):
        cls, module = original_class(type(module_or_class)), module_or_class
    else:
        raise TypeError(
            f"form() expects an nn.Module or an nn.Module subclass, "
            f"got {type(module_or_class).__name__}"
        )
    try:
        sig = signature(cls)
    except (TypeError, ValueError) as e:
        raise TypeError(
            f"form() cannot read the constructor signature of {cls.__qualname__}: {e}"
        ) from e
    derived: dict[str, Any] = {}
    recorded: inspect.BoundArguments | None = None
    if module is not None:
        rec = recorded_args(module)
        if rec is not None:
            try:
                recorded = sig.bind(*rec[0], **rec[1])
            except TypeError:
                recorded = None
        if recorded is None:
            try:
                derived = derived_values(module)
            except Exception:  # noqa: BLE001 - a subclass without the attributes torch sets
                derived = {}
    fields: list[Field] = []
    infos: dict[str, KindInfo] = {}
    for p in sig.parameters.values():
        if module is None:
            value: Any = None if p.default is _MISSING else p.default
            if p.kind is p.VAR_POSITIONAL:
                value = ()
            elif p.kind is p.VAR_KEYWORD:
                value = {}
            origin = "default"
        else:
            value, origin = current(module, p, derived, recorded)
        f, info = make_field(cls, p, value, origin)
        if origin == "attribute" and check_type(f, info, value) is not None:
            # A same-name attribute that does not fit the parameter (a submodule where a class
            # is expected, ...) is not the constructor value; show the default as a guess.
            guess = None if p.default is _MISSING else p.default
            f, info = make_field(cls, p, guess, "default")
        fields.append(f)
        infos[p.name] = info
    hint, check = "", None
    if module is not None and recorded is None and not cls.__module__.startswith("torch."):
        hint, check = fill(module, cls, sig, fields, infos, started, form)
    notes = recorded_notes(module) if module is not None and recorded is not None else {}
    out: list[Field] = []
    out_infos: dict[str, KindInfo] = {}
    for f in fields:
        if f.name in notes:
            f = dataclasses.replace(f, note=notes[f.name])
        pairs = [(f, infos[f.name])]
        if f.kind not in ("varargs", "varkw") and is_config(f.value):
            pairs = expand(cls, f, infos[f.name])
        for g, info in pairs:
            out.append(g)
            out_infos[g.name] = info
    made = Form(cls, sig, tuple(out), out_infos, hint, module)
    # The search's last build is the gate's build for these values (its tensor types compared too).
    made._check = None if check is None or module is None else exact.typed(check, module)
    return made
