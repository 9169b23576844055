"""Linear sum: a layer's width is a linear sum of arguments the build holds wrong in one of them.

A constructor that joins inputs hands its layer a sum (``_forms/sources/sums.py`` reads it off
the AST: Bahdanau's attention ``nn.Linear(enc_hid_dim * 2 + dec_hid_dim, dec_hid_dim)``). Where
the build's number at a layer that ``self.<kept>`` holds is the sum's value at the current values
and the live number is another, each argument of the sum is solved for alone, the others kept:
``v + (live - b) / coef``, where that is a whole number above 0. Example: ``Attention(enc_hid_dim,
dec_hid_dim)`` built with ``enc_hid_dim`` 10 and ``dec_hid_dim`` 10 (``attn`` 30 wide) where the
live one is 34 wide: ``enc_hid_dim`` 12 (``dec_hid_dim`` is read off ``v``, a layer of its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...sources.sums import Sum
from .problem import Problem, numbers

__all__ = ["propose"]


def _sums(p: Problem) -> list[Sum]:
    out: dict[Sum, None] = {}
    for u in p.uses.values():
        for s in u.sums:
            if isinstance(s, Sum) and (
                p.diff.path == s.kept or p.diff.path.startswith(s.kept + ".")
            ):
                out[s] = None
    return list(out)


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if not p.uses or p.diff.aspect == "children":
        return
    found = _sums(p)
    if not found:
        return
    values = {**p.seen, **p.values}
    # The live layer's other numbers (its repr: ``in_features=34, out_features=10``).
    shown = numbers(p.target.extra_repr()) if p.target is not None else []
    for b, live in p.pairs:
        if type(b) is not int or type(live) is not int or b == live:
            continue
        for s in found:
            if s.value(values) != b:
                continue  # the number is not this sum's
            # An argument whose value the layer's text shows unchanged elsewhere (``dec_hid`` as
            # the Linear's out_features) is likelier right: the others are solved for first.
            steady = set(shown) - {live}
            order = sorted(s.coefs, key=lambda nc: values[nc[0]] in steady)
            for name, coef in order:
                step, rest = divmod(live - b, coef)
                new = values[name] + step
                if name in p.values and not rest and new > 0:
                    yield {name: new}
