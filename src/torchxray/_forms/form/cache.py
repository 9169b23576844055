"""The forms of one model's modules, each opened once per state of the model (``FormCache``).

A form costs up to a second (its search and gate build the class on meta), and one Apply in the
widget asked for the edited module's form three times: the Form tab's request, the edit's
validation, the edit's plan (and the rebuilt module's twice: the entry's labels and its replay
code). A form is a pure function of the module and the model around it (``_forms/candidates/``), so
one opened for a state of the model serves every later request for that state.

Lifetime: the owner's. ``PatchLog`` owns one (``PatchLog.form``) and calls ``changed()`` after
every change it makes to the model, which drops every form (a module's form may read its place in
the model, ``_forms/sources/position.py``, which any swap may move). A change made outside the log (a cell
that sets a layer's attribute) is seen through the module's state: the parts an exact rebuild must
reproduce (``_forms/rebuild/parts.py``), read again on each request, a few ms against the form's second.
Not a module global: two logs never share forms, and a log that goes takes its forms with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from torch import nn

from ..rebuild.parts import parts

__all__ = ["FormCache"]

F = TypeVar("F")


def _state(module: nn.Module) -> int:
    return hash(tuple(parts(module, kinds=True).items.items()))


class FormCache(Generic[F]):
    """``cache(module)`` is ``open(module)``, opened once per (module object, state) until
    ``changed()``; ``opened`` counts the forms it opened (a test counts an Apply's)."""

    def __init__(self, open_form: Callable[[nn.Module], F]) -> None:
        self._open = open_form
        # id(module) -> (the module, its state, its form). The module is held: its form holds it
        # anyway (``Form.module``), and an id is only a key while its object is alive.
        self._forms: dict[int, tuple[nn.Module, int, F]] = {}
        self.opened = 0

    def __call__(self, module: nn.Module) -> F:
        state = _state(module)
        got = self._forms.get(id(module))
        if got is not None and got[0] is module and got[1] == state:
            return got[2]
        made = self._open(module)  # a form that raises is not kept: the next request says why
        self.opened += 1
        self._forms[id(module)] = (module, state, made)
        return made

    def changed(self) -> None:
        """The owner changed the model: every form may have changed."""
        self._forms.clear()
