"""Stage 4 of a form (``forms.py`` runs the stages): the exact check, the one place that decides
whether a form is exact or refused with a sentence.

- For a searched form, ``decide(draft, found)`` writes what the search found (stage 3) into the
  draft's fields: a value the search proved is "inferred", a nearer guess stays a guess, a field
  whose draft value rebuilds as exactly keeps it with a note; then the form is exact (its
  search's last build matched the live module part by part) or refused, with why
  (``Verdict.hint``) and the gate's one-line answer (``Verdict.check``).
- For any other form (a recorded module, a torch class, a class), the gate (``gate.py``)
  builds the form unchanged on meta and compares it with the live module, once, when the form
  is first asked whether it is exact (``Form.inexact``): most forms are opened for their values.
- Either way a live module holding tensors of types no constructor makes (a quantized weight)
  is refused by name (``gate.typed``).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any

from ..budget import CEILING_NOTE, CEILING_SECONDS
from ..candidates import Found
from ..candidates.infer import Inferred
from ..field import Field, guessed, make_field
from ..kinds import KindInfo
from ..rebuild.compare import Check
from ..sources import Draft
from ..values import same, to_text
from .gate import check, typed

__all__ = ["Verdict", "check", "decide", "note"]


@dataclass
class Verdict:
    """What stage 4 hands down: the form's fields with the values it stands by, their kinds, why
    the form is not exact (``hint``, "" when it is) and the gate's answer (``check``)."""

    fields: list[Field]
    infos: dict[str, KindInfo]
    hint: str
    check: Check


def note(found: Any, kind: str) -> str:
    """The field's note: the value that rebuilds the module as exactly as the one shown."""
    try:
        text = to_text(kind, found)
    except Exception:  # noqa: BLE001 - a value without a text form: its repr
        text = repr(found)
    return (
        f"a guess: {text} rebuilds it just as exactly, so the value it was built with is not "
        "known; an edit may tell them apart (record its construction for the exact value)"
    )


def _members_note(name: str, rivals: dict[str, Any]) -> str:
    """The note of a config with members that rebuild as exactly with other values."""
    try:
        said = ", ".join(f"{k[len(name) + 1 :]}={to_text('literal', v)}" for k, v in rivals.items())
    except Exception:  # noqa: BLE001 - a value without a text form: its repr
        said = ", ".join(f"{k[len(name) + 1 :]}={v!r}" for k, v in rivals.items())
    return (
        f"a guess: with {said} it rebuilds just as exactly, so the value it was built with is "
        "not known; an edit may tell them apart (record its construction for the exact value)"
    )


def _write(
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    infos: dict[str, KindInfo],
    found: Inferred,
    rivals: dict[str, Any],
) -> None:
    """The values the search found written into ``fields`` and ``infos`` (in place): inferred
    where the build is exact, a nearer guess where not, the draft flagged where a rival value
    rebuilds as exactly."""
    for i, f in enumerate(fields):
        if f.name in rivals:
            kept_value = found.values[f.name]
            if not same(kept_value, f.value):  # a required one: the value found, as a guess
                f, infos[f.name] = _remade(
                    cls, sig.parameters[f.name], kept_value, "default", infos
                )
            fields[i] = dataclasses.replace(
                f, note=note(rivals[f.name], f.kind), rivals=(rivals[f.name],)
            )
            continue
        # A required value the search proved None is given, not missing (drop_path=None).
        given = found.exact and f.required and f.value is None and f.origin == "default"
        members = {k: v for k, v in rivals.items() if k.startswith(f"{f.name}.")}
        if members and found.exact and f.name in found.values:
            # A config made from members of which one is not proven: the config is a guess.
            f, infos[f.name] = _remade(
                cls, sig.parameters[f.name], found.values[f.name], "default", infos
            )
            fields[i] = dataclasses.replace(f, note=_members_note(f.name, members))
            continue
        if f.name not in found.values or same(found.values[f.name], f.value) and not given:
            continue
        value = found.values[f.name]
        if found.exact:
            # A default the build agrees with is proven by the gate, but it stays a default; a
            # value the search had to find is "inferred".
            fields[i], infos[f.name] = _remade(
                cls, sig.parameters[f.name], value, "inferred", infos
            )
        elif guessed(f) and not f.required:
            # The closest build's value: still a guess, but nearer than the default. A required
            # value stays empty: a guess there would build without complaint.
            fields[i], infos[f.name] = _remade(cls, sig.parameters[f.name], value, "default", infos)


def _remade(
    cls: type, p: inspect.Parameter, value: Any, origin: str, infos: dict[str, KindInfo]
) -> tuple[Field, KindInfo]:
    """The field of ``p`` holding the value the search found, of the draft's kind where the
    draft read a float field from an int default (``sources``' ``takes_floats``)."""
    f, info = make_field(cls, p, value, origin)
    was = infos.get(p.name)
    if was is not None and was.kind == "float" and info.kind == "int" and not f.annotation:
        info, f = dataclasses.replace(info, kind="float"), dataclasses.replace(f, kind="float")
    return f, info


def _hint(
    cls: type, fields: list[Field], looked_for: list[str], found: Inferred
) -> tuple[str, Check]:
    """Why the form is not exact (the search's closest build), and the gate's answer for it."""
    if found.check.cut:
        return (
            f"{cls.__name__}'s build with the values it keeps did not finish within the form's "
            f"safety ceiling ({CEILING_SECONDS:g} s of CPU), so they are not checked.",
            found.check,
        )
    closest = found.check.reason.removeprefix("inexact: ")
    empty = any(f.required and f.value is None for f in fields)
    # The closest build is the form's own when no required value stayed empty: the gate's answer
    # (with its parts, so that an edit setting the field that differs can apply). Its one line
    # names the part; the hint says how the search ended.
    answer = Check(f"inexact: {closest}", found.check.diffs, None if empty else found.check.base)
    what = (
        f"no attribute for {', '.join(looked_for)}" if looked_for else "attributes that rebuild it"
    )
    return (
        f"{cls.__name__} keeps {what}, and {found.reason}: required ones stay empty, the others "
        "show guesses. Record the model's construction (`%load_ext torchxray` or "
        "`tx.record_everything()` before building it, or `with tx.record_init_args():`) to get "
        "exact forms.",
        answer,
    )


def decide(d: Draft, found: Found) -> Verdict:
    """The searched form's verdict (see the module doc)."""
    ctor = d.constructor
    fields, infos = list(d.fields), dict(d.infos)
    inferred = found.inferred
    _write(ctor.cls, ctor.signature, fields, infos, inferred, found.rivals)
    if inferred.exact:
        hint, answer = "", inferred.check
    else:
        hint, answer = _hint(ctor.cls, fields, found.looked_for, inferred)
    if found.stopped:
        hint = f"{hint} {CEILING_NOTE}".strip()  # the one form allowed to differ says so
    # The search's last build is the gate's build for these values (its tensor types compared too).
    assert ctor.module is not None
    return Verdict(fields, infos, hint, typed(answer, ctor.module))
