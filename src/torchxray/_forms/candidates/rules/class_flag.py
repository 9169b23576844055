"""Class flag: the build made a layer of another class than the live one, and a flag chose it.

A constructor that picks a layer's class by a flag (V-Net's ``nn.ELU(inplace=True) if elu else
nn.PReLU(n)``, ``nn.Linear(...) if head else nn.Identity()``) shows no flag anywhere: the live
layer's class is all there is. ``layer_class.py`` reads fields that hold a class or name one; this
rule reads the others: every flag the constructor tests (``Usage.condition``: ``if x``, ``a if x
else b``, ``not x``, here or in a helper) is proposed its opposite, or both where unknown, the
flags first that it keeps nowhere (a kept flag is read off the module and right already). Example: a
block built with ``elu=True`` makes ``ELU`` where the live one holds ``PReLU(num_parameters=8)``:
``elu`` False.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...field import Field
from .problem import Problem

__all__ = ["propose"]


def _flag(p: Problem, f: Field) -> bool:
    """A bool, or a value the constructor only takes as a truth (``if elu``, ``a if elu else b``):
    a field no source could read holds None, or a number that stood in for the flag."""
    v = p.values.get(f.name)
    u = p.uses.get(f.name)
    if u is None or not u.condition:
        return False  # a flag the constructor never tests chose no layer's class
    if isinstance(v, bool):
        return True
    if u.number or u.sequence or u.fields or u.called:
        return False
    return v is None or type(v) is int


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.diff.aspect != "class" or p.target is None:
        return
    flags = [f for f in p.fields if _flag(p, f)]
    # A flag the module keeps (``self.elu = elu``) was read off it: flipping it is a last resort.
    kept = [f for f in flags if (u := p.uses.get(f.name)) is not None and u.kept]
    for f in [f for f in flags if f not in kept] + kept:
        v = p.values.get(f.name)
        yield from ({f.name: b} for b in ((False, True) if v is None else (not v,)))
