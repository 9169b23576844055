"""Rounded float: the build's number and the live one differ in their last digits only.

A float field read back from a value the constructor derived (the last block's drop rate,
``rate * i / (n - 1)``) carries that arithmetic's rounding: ``0.09999999999999999`` where a
person wrote ``0.1``, and every rate derived from it then differs from the live one by an ulp.
The value a person writes is short: each float field is proposed its value at 12 significant
digits, where that is another number. Example: torchvision's ``ConvNeXt(stochastic_depth_prob=
0.1)``, whose rate read off its blocks is ``0.09999999999999999``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]

_CLOSE = 1e-9  # relative: rounding, not another value


def _rounding(a: Any, b: Any) -> bool:
    if type(a) is not float or type(b) is not float or a == b:
        return False
    return abs(a - b) <= _CLOSE * max(abs(a), abs(b))


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if not any(_rounding(a, b) for a, b in p.pairs):
        return
    for f in p.fields:
        v = p.values.get(f.name)
        if type(v) is float and (r := float(f"{v:.12g}")) != v:
            yield {f.name: r}
