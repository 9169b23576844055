"""Linear sum: a layer's width is a linear sum of arguments the build holds wrong in one of them.

A constructor that joins inputs hands its layer a sum (``_forms/sources/sums.py`` reads it off
the AST: Bahdanau's attention ``nn.Linear(enc_hid_dim * 2 + dec_hid_dim, dec_hid_dim)``). Where
the build's number at a layer that ``self.<kept>`` holds is the sum's value at the current values
and the live number is another, each argument of the sum is solved for alone, the others kept:
``v + (live - b) / coef``, where that is a whole number above 0. Example: ``Attention(enc_hid_dim,
dec_hid_dim)`` built with ``enc_hid_dim`` 10 and ``dec_hid_dim`` 10 (``attn`` 30 wide) where the
live one is 34 wide: ``enc_hid_dim`` 12 (``dec_hid_dim`` is read off ``v``, a layer of its own).
Where no argument alone solves to a width above 0, each is solved for with the others at 1.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ...sources.sums import Sum
from .problem import Problem, handed_at, numbers

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if not p.uses or p.diff.aspect == "children":
        return
    found: list[Sum] = handed_at(p, Sum)
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
            solved = False
            for name, coef in order:
                step, rest = divmod(live - b, coef)
                new = values[name] + step
                if name in p.values and not rest and new > 0:
                    solved = True
                    yield {name: new}
            if not solved:
                yield from _from_ones(s, live, p.values)


def _from_ones(s: Sum, live: int, values: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Where the others already sum past the live width, each argument solved for with the
    others at 1: the layer shows only the sum, so ``ambiguous.py`` flags the split a guess
    (SpinningUp's ``MLPQFunction``: ``obs_dim + act_dim`` 23 where both were read as 128)."""
    if not all(name in values for name, _ in s.coefs):
        return
    for name, coef in s.coefs:
        others = {n: 1 for n, _ in s.coefs if n != name}
        rest = live - s.const - sum(c for n, c in s.coefs if n != name)
        new, left = divmod(rest, coef)
        if not left and new > 0:
            yield {**others, name: new}
