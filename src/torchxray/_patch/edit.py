"""An edit, planned before the model is touched: the module rebuilt from its form with the changes,
fitted to its slot (device, dtype, mode, hooks, the weights that still fit, the parametrizations
and quantized tensors that still fit), and checked to change only what the changes reach
(``_patch/gate.py``). ``PatchLog.edit`` commits the plan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .._forms.field import FormError
from . import gate, size
from .paths import SlotIndex
from .placement import carry, place

__all__ = ["EditPlan", "plan"]


@dataclass(frozen=True)
class EditPlan:
    new: nn.Module
    changes: dict[str, tuple[Any, Any]]
    kept: tuple[str, ...]
    fresh: tuple[str, ...]
    guessed: tuple[str, ...]
    cast: bool
    effects: tuple[str, ...]  # one line per submodule the edit changes (``gate.check``)


def plan(
    index: SlotIndex,
    path: str,
    old: nn.Module,
    hyperparameters: dict[str, Any],
    confirm: bool,
    inexact_ok: bool,
    form: Callable[[nn.Module], Any],
) -> EditPlan:
    """``form``: the log's forms (``PatchLog.form``), each opened once per state of the model."""
    from .._forms.form.unchanged import equal, nothing_message

    asked = tuple(hyperparameters)
    before = form(old)
    # Values are compared parsed, not as text: "(2,2)" for (2, 2) or "float16" for
    # torch.float16 changes nothing, and an edit that changes nothing records no entry.
    hyperparameters = before.changed(**hyperparameters)
    if not hyperparameters:
        raise ValueError(nothing_message(before, path, asked))
    if not confirm:
        size.check(before, hyperparameters, old, path)
    try:
        new = before.build(**hyperparameters)
    except FormError as e:
        raise _unread(before, e) from None
    if not isinstance(new, nn.Module):
        raise TypeError(
            f"the rebuilt {type(old).__name__} at {path!r} is a {type(new).__name__}, not an "
            "nn.Module; return/pass a module"
        )
    try:
        after: dict[str, Any] = dict(form(new).values)
    except Exception:  # noqa: BLE001 - only used to label the entry
        after = {}
    old_values = dict(before.values)
    changes = {k: (old_values.get(k), after.get(k, v)) for k, v in hyperparameters.items()}
    # A value the constructor canonicalises (kernel_size=3 is (3, 3)) may also be unchanged.
    changes = {k: v for k, v in changes.items() if not (k in after and equal(*v))}
    if not changes:
        raise ValueError(nothing_message(before, path, asked))
    # Values the form could not recover are rebuilt from the signature's defaults: listed, though
    # the gate below proves that they change no part of the module (or the caller accepted it).
    guessed = tuple(
        f.name
        for f in before.fields
        if f.origin == "default"
        and f.name not in hyperparameters
        and f.kind not in ("varargs", "varkw")
    )
    cast = not ({"dtype", "device"} & set(hyperparameters))
    place(new, old, index, path, cast=cast)
    kept, fresh = carry(new, old, _unchanged(before, old))
    effects = gate.check(before, old, new, path, inexact_ok)
    return EditPlan(new, changes, kept, fresh, guessed, cast, effects)


def _unread(before: Any, e: FormError) -> FormError:
    """``e`` led by why the form is refused, where it is: a value the form could not read is
    "required, got nothing", and a word typed where it reads literals is no string, which says
    little without the reason (the error's "" key is the form's own, ``_view/session.py``)."""
    if not before.inexact:
        return e
    reason = before.inexact.removeprefix("inexact: ")
    lead = f"its form could not read this module's values ({reason})"
    return FormError({"": lead, **e.errors}, before.cls)


def _unchanged(before: Any, old: nn.Module) -> nn.Module | None:
    """``old`` built again from its form unchanged, on meta (no weights, no random numbers
    drawn), where it holds a wrapping (a parametrization, the legacy weight_norm hook): what its
    constructor made, which ``carry`` leaves to the new values (``weight_norm(conv) if use_norm
    else conv`` edited to False stays plain). None where there is none or it cannot be built:
    every wrapping is then taken for one added after construction."""
    from torch.nn.utils import parametrize

    from .._forms.rebuild.hooked import norm_hooks

    if not any(parametrize.is_parametrized(m) or norm_hooks(m) for m in old.modules()):
        return None
    try:
        with torch.device("meta"):
            made = before.build()
    except Exception:  # noqa: BLE001 - the new values' build above is what the edit proves
        return None
    return made if isinstance(made, nn.Module) else None
