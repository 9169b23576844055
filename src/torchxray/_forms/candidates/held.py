"""Where the search starts a guessed field that the constructor keeps whole under another name
(``self._steps = steps``, ``self.n_cells = cells``): at the value that attribute holds, not at
the parameter's default; or that it handed as it was given to a layer it keeps: at the value
that layer's form found (stage 2 reads it: ``Leads.starts``, ``sources/passed.py``).

A default is the search's first guess for a field no same-named attribute holds; where the
constructor kept the argument as it was given under a name of its own, that attribute holds the
value it was given, and a first build from the default is a build of another model (a search
network with twice the steps, ten times the parts): on a large one it spends the budget before
any proposal is tried. Only a plain value is taken (a number, a flag, a string): the same one in
every attribute it was kept under. It is a start, no reading: the default stays among the
field's candidates, the rebuild proves the start or the search moves it, and a default that
rebuilds as exactly is flagged by the settling (``ambiguous.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from ..field import Field
from ..sources import Leads
from ..sources.passed import kept

__all__ = ["held_starts"]

_PLAIN = (bool, int, float, str)


def held_starts(
    module: nn.Module,
    searched: list[Field],
    leads: Leads,
    fits: Callable[[Field, Any], bool],
) -> dict[str, Any]:
    """Each searched field at its default whose argument the constructor kept under another
    name, with the plain value those attributes hold (one value, of the default's type); else
    handed to a layer it keeps, with the value that layer's form found (``leads.starts``)."""
    uses, handed = leads.uses, leads.starts
    out: dict[str, Any] = {}
    for f in searched:
        if f.name in handed and fits(f, handed[f.name]):
            out[f.name] = handed[f.name]
        u = uses.get(f.name)
        if u is None or not u.kept or f.origin != "default" or f.value is None:
            continue
        held = kept(module, u)[: len(u.kept)]
        if not held or any(type(v) is not type(f.value) for v in held):
            continue
        if all(v == held[0] for v in held) and held[0] != f.value and fits(f, held[0]):
            out[f.name] = held[0]
    return out
