"""Numbers a difference relates: the moves of the rules ``rules/number_pair.py`` and
``rules/derived_widths.py``, that read a built number against the live one (``b`` against
``live``) through a field's value ``v``.

- ``v`` is ``b``: the live number; ``b = k * v``, ``b = v / k``, ``b = v + k``, ``b = 2 * v +- 1``;
  a square grid's side (``b = (v // k) ** 2``, + 1 for a class token), per tuple element too;
- a per-item tuple whose items are one value (anchors per feature map): each move on all items;
- several fields move together: a ratio that takes up a width's factor (a uniform tuple's items
  too), an unset width that defaulted to another, ``b = w * r`` (any field's width), ``b = W /
  v``, ``b = v + w`` (a gate's input and hidden widths side by side), ``b = W - W // v`` (the
  channels a split leaves untouched, its part ``W // v`` kept).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ...field import Field

__all__ = ["from_pair", "grid", "keeping", "product", "quotient", "summed"]


def grid(v: int, b: int, live: int) -> Iterator[int]:
    for extra in (0, 1):
        # A grid: b = (v / k) ** 2 (+ 1 for a class token): patches of an image side.
        s, t = math.isqrt(max(b - extra, 0)), math.isqrt(max(live - extra, 0))
        if s > 1 and s * s == b - extra and t * t == live - extra and v >= s:
            yield t * (v // s)  # floor: 64 // 7 = 9 windows a side


def _int_moves(v: int, b: int, live: int) -> Iterator[int]:
    if v == b:
        yield live
    # Two squares are a grid's points before they are a multiple: a side tried as a multiple
    # (b = k * v) builds a grid k ** 2 times too big, and a loop over its pairs of points
    # takes the search's whole budget.
    yield from grid(v, b, live)
    if v and b % v == 0 and b // v > 1 and live % (b // v) == 0:
        yield live // (b // v)  # b = k * v
    if b and v % b == 0 and v // b > 1:
        yield live * (v // b)  # b = v / k
    if b != v and abs(b - v) <= 8:
        yield live - (b - v)  # b = v + k
    for c in (-1, 1):
        if b == 2 * v + c and (live - c) % 2 == 0:
            yield (live - c) // 2  # b = 2 * v - 1: relative positions across a window


def from_pair(f: Field, v: Any, b: Any, live: Any) -> Iterator[Any]:
    if isinstance(v, bool):
        return
    if type(v) is int and b == v and type(live) is float:
        yield live  # an int where the live module holds a float (attn_ratio 1 vs 1.0)
    if type(v) is int and type(b) is int and type(live) is int:
        yield from (x for x in _int_moves(v, b, live) if x >= 0)
    elif type(v) is float and isinstance(b, (int, float)) and isinstance(live, (int, float)):
        if math.isclose(v, b, rel_tol=1e-6):
            yield float(live)
    if type(v) is int and v > 0 and type(b) is float and type(live) is float and live > 0:
        # An attention's scale: b = v ** -0.5 (head_dim 64 gives 0.125).
        if math.isclose(b, v**-0.5, rel_tol=1e-6):
            root = live**-2
            if abs(root - round(root)) < 1e-6:
                yield round(root)
    elif isinstance(v, str) and isinstance(b, str) and v == b:
        yield live
    elif isinstance(v, (tuple, list)) and v and all(type(x) is int for x in v):
        if type(b) is int and type(live) is int and b in v:
            yield type(v)(live if x == b else x for x in v)
            at = [i for i, x in enumerate(v) if x == b]
            for i in reversed(at) if len(at) > 1 else []:
                # One item of several equal ones (an encoder's last width, the output's).
                yield type(v)(live if j == i else x for j, x in enumerate(v))
            if all(x == b for x in v):
                yield live  # an int for a tuple field (kernel_size=3)
        elif type(b) is int and type(live) is int and len(set(v)) == 1:
            # A square grid's side per dimension (feat_size (56, 56): 8 ** 2 windows of 7); one
            # value per item (num_anchors (3, 3, 3) where a layer has b = 4 * 3 channels).
            for x in dict.fromkeys([*grid(v[0], b, live), *_int_moves(v[0], b, live)]):
                if x > 0:
                    yield type(v)(x for _ in v)


def _nice(x: float, parts: int = 4) -> bool:
    """A positive whole number of ``1 / parts`` (quarters; twelfths take thirds too)."""
    return x > 0 and abs(x * parts - round(x * parts)) < 1e-9


def keeping(
    fields: Sequence[Field], values: Mapping[str, Any], name: str, b: int, live: int
) -> Iterator[dict[str, Any]]:
    """``name`` goes from ``b`` to ``live`` while the widths derived from it stay: a ratio or a
    multiplier takes up the factor (``mid = in_chs * exp_ratio``: 96 * 1.0 is 16 * 6.0), and an
    unset width that defaulted to ``name`` keeps ``b``."""
    for f in fields:
        v = values.get(f.name)
        if f.name == name or isinstance(v, bool) or "drop" in f.name:
            continue
        if type(v) is float and v and _nice(v * b / live):
            yield {name: live, f.name: v * b / live}
        elif type(v) is int and v >= 1 and (v * b) % live == 0:
            yield {name: live, f.name: v * b // live}
        elif isinstance(v, (tuple, list)) and _uniform(v) and (v[0] * b) % live == 0:
            # One multiplier per item (num_anchors per feature map, times num_classes).
            yield {name: live, f.name: type(v)(v[0] * b // live for _ in v)}
        elif v is None and not f.required and f.kind in ("int", "int_or_tuple", "literal"):
            # An unset width that defaulted to ``name`` (dim_out = dim_out or dim) takes the
            # live one, or ``name`` moves and it keeps ``b``.
            yield {f.name: live}
            yield {name: live, f.name: b}


def _uniform(v: Any) -> bool:
    return (
        isinstance(v, (tuple, list))
        and bool(v)
        and all(type(x) is int for x in v)
        and len(set(v)) == 1
        and v[0] >= 1
    )


def summed(
    fields: Sequence[Field], values: Mapping[str, Any], b: int, live: int, known: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """``b = v + w`` for a field's ``v`` and another width ``w`` (a gate reads its input and its
    hidden state side by side: in = input_size + hidden_size): ``v`` becomes ``live - w``."""
    ints = [(f.name, values[f.name]) for f in fields if type(values.get(f.name)) is int]
    widths = ints + [(n, v) for n, v in known.items() if type(v) is int]
    for v_name, v in ints:
        for w_name, w in dict.fromkeys(widths):
            if v_name != w_name and w > 0 and v + w == b and live - w > 0:
                yield {v_name: live - w}


def product(
    fields: Sequence[Field], values: Mapping[str, Any], b: int, live: int, known: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """``b = w * r`` for a width ``w`` (any field's, ``known``) and a ratio ``r`` (mlp hidden =
    dim * mlp_ratio): ``r`` becomes ``live / w``."""
    for fr in fields:
        r = values.get(fr.name)
        if type(r) is not float or not r or "drop" in fr.name:
            continue
        for w in dict.fromkeys(v for v in known.values() if type(v) is int):
            if w > 0 and math.isclose(w * r, b) and _nice(live / w):
                yield {fr.name: live / w}
            # A fused gate doubles the hidden width (SwiGLU: 2 * dim * mlp_ratio); such ratios
            # are often thirds of a whole (4 * 2 / 3).
            elif w > 0 and math.isclose(2 * w * r, b) and live % 2 == 0 and _nice(live / 2 / w, 12):
                yield {fr.name: r * live / b}


def quotient(
    fields: Sequence[Field], values: Mapping[str, Any], b: int, live: int, known: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    """``b = W / v`` (head_dim = dim / num_heads, ``W`` any field's): ``v`` becomes ``W /
    live``."""
    ints = [(f.name, values[f.name]) for f in fields if type(values.get(f.name)) is int]
    widths = [(n, v) for n, v in known.items() if type(v) is int]
    for w_name, w in widths:
        for v_name, v in ints:
            # Floor division too: dim // n_div.
            if v_name != w_name and v > 0 and w // v == b and w % live == 0:
                yield {v_name: w // live}
            # The rest of a split (dim - dim // n_div), the split part kept: both fields move.
            part = w // v if v > 0 else 0
            if v_name != w_name and part and w - part == b and (live + part) % part == 0:
                if w_name in values:
                    yield {w_name: live + part, v_name: (live + part) // part}
