"""Values a difference suggests: the search's first proposals (``_forms/infer.py``).

A build with the current values differs from the live module in some parts
(``_forms/exact.py``). Each difference is read for what would explain it, with no rule per class:

- numbers: the built text holds ``b`` where the live one holds ``l`` (``GroupNorm(32, 32)`` vs
  ``GroupNorm(8, 32)``; ``Linear(32, 64)`` vs ``Linear(32, 128)``). A field whose value ``v`` is
  ``b`` is proposed ``l``; one with ``b = k * v`` is proposed ``l / k``, ``b = v + k`` gives
  ``l - k`` (``proj.out_features = 2 * dim_out``); tuples are changed element by element;
- strings and floats the same way (``eps=1e-06`` vs ``eps=1e-05``; ``'gelu'`` vs ``'silu'``);
- a class: a field holding the built class (or a partial of it) is proposed the live one;
- a submodule on one side only, or a flag attribute: optional fields are proposed None (or their
  default), flags their opposite, class fields the live submodule's class; the field that shares
  the part's name first, and a depth with one rate per block (``_forms/presence.py``);
- an attribute holding a dict or an object of values: its entries by name; a float attribute no
  field holds: a float field scaled by live / built;
- the members of a dataclass argument (``_forms/members.py``) by the same rules, one at a time.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from torch import nn

from .._unwrap import original_class
from .exact import Difference
from .field import Field
from .members import nested
from .presence import by_part, flag_like, per_block, stem

__all__ = ["proposals"]

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
_QUOTED = re.compile(r"'([^']*)'")
MAX_PER_DIFF = 24


def _numbers(text: str) -> list[int | float]:
    out: list[int | float] = []
    for tok in _NUMBER.findall(text):
        try:
            out.append(int(tok))
        except ValueError:
            out.append(float(tok))
    return out


def _pairs(d: Difference) -> list[tuple[Any, Any]]:
    """(built, live) values at the same place of the two texts, where they differ."""
    if d.live is None or d.built is None:
        return []
    if d.aspect == "children":
        # A container with more or fewer blocks: a depth.
        na, nb = (len([n for n in t.split(", ") if n]) for t in (d.built, d.live))
        return [(na, nb)] if na != nb else []
    out: list[tuple[Any, Any]] = []
    finders: tuple[Callable[[str], list[Any]], ...] = (_numbers, _QUOTED.findall)
    for find in finders:
        a, b = find(d.built), find(d.live)
        if len(a) == len(b):
            out += [(x, y) for x, y in zip(a, b) if x != y or type(x) is not type(y)]
    return out


def _grid(v: int, b: int, live: int) -> Iterator[int]:
    for extra in (0, 1):
        # A grid: b = (v / k) ** 2 (+ 1 for a class token): patches of an image side.
        s, t = math.isqrt(max(b - extra, 0)), math.isqrt(max(live - extra, 0))
        if s > 1 and s * s == b - extra and t * t == live - extra and v % s == 0:
            yield t * (v // s)


def _int_moves(v: int, b: int, live: int) -> Iterator[int]:
    if v == b:
        yield live
    # Two squares are a grid's points before they are a multiple: a side tried as a multiple
    # (b = k * v) builds a grid k ** 2 times too big, and a loop over its pairs of points
    # takes the search's whole budget.
    yield from _grid(v, b, live)
    if v and b % v == 0 and b // v > 1 and live % (b // v) == 0:
        yield live // (b // v)  # b = k * v
    if b and v % b == 0 and v // b > 1:
        yield live * (v // b)  # b = v / k
    if b != v and abs(b - v) <= 8:
        yield live - (b - v)  # b = v + k


def _from_pair(f: Field, v: Any, b: Any, live: Any) -> Iterator[Any]:
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
            if all(x == b for x in v):
                yield live  # an int for a tuple field (kernel_size=3)


def _cls_of(v: Any) -> type | None:
    if isinstance(v, type):
        return v
    if isinstance(v, functools.partial) and isinstance(v.func, type):
        return v.func
    return None


def _keyword(d: Difference, target: nn.Module | None) -> tuple[str, Any, bool] | None:
    """(name, live value, found) of a "name=value" repr item; a live module whose repr leaves the
    item out holds its class's default."""
    if not d.aspect.startswith("repr ") or d.aspect[5:].isdigit():
        return None
    name = d.aspect[5:]
    if d.live is not None:
        text = d.live.split("=", 1)[1]
        try:
            return name, ast.literal_eval(text), True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            # A string formatted without quotes (torch's convs print padding=same).
            return (name, text, True) if text.isidentifier() else None
    if target is None:
        return None
    try:
        p = inspect.signature(type(target)).parameters.get(name)
    except (TypeError, ValueError):
        return None
    if p is None or p.default is p.empty:
        return None
    return name, p.default, True


def _literal(text: str) -> str:
    """The parts' text of a sequence as a Python literal: ``tuple(0, 0)`` -> ``(0, 0,)``,
    ``list(1, 2)`` -> ``[1, 2]`` (``_forms/parts.py`` names the type of every sequence)."""
    out: list[str] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        word = next((w for w in ("tuple(", "list(") if text.startswith(w, i)), None)
        if word is not None and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            stack.append(word[0])
            out.append("(" if word == "tuple(" else "[")
            i += len(word)
            continue
        ch = text[i]
        if ch == "(":
            stack.append("p")
        elif ch == ")" and stack:
            kind = stack.pop()
            ch = "]" if kind == "l" else ",)" if kind == "t" and out[-1] != "(" else ")"
        out.append(ch)
        i += 1
    return "".join(out)


def _attribute(d: Difference) -> tuple[str, Any, bool] | None:
    """(name, live value, found) of an attribute the build sets to another literal."""
    if not d.aspect.startswith("attr ") or d.live is None:
        return None
    try:
        return d.aspect[5:], ast.literal_eval(_literal(d.live)), True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _members(d: Difference) -> list[tuple[str, Any]]:
    """(key, live value) of the entries that differ in an attribute holding a dict or an object
    of values (a box coder's ``weights``, a config record's ``attention_head_dim``)."""
    if not d.aspect.startswith("attr ") or d.live is None or d.built is None:
        return []
    got: list[dict[Any, Any]] = []
    for text in (d.live, d.built):
        body = text[text.find("{") :] if "{" in text and text.endswith("}") else ""
        try:
            value = ast.literal_eval(_literal(body)) if body else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None
        if not isinstance(value, dict):
            return []
        got.append(value)
    live, built = got
    return [
        (k, v)
        for k, v in live.items()
        if isinstance(k, str) and (k not in built or built[k] != v or type(built[k]) is not type(v))
    ]


def _named(f: Field, key: str) -> bool:
    key = key.lstrip("_")  # a private attribute keeps its parameter's value (_pre_nms_top_n)
    return f.name == key or f.name.endswith("_" + key) or f.name.startswith(key + "_")


def _nice(x: float) -> bool:
    return x > 0 and abs(x * 4 - round(x * 4)) < 1e-9


def _keeping(
    fields: list[Field], values: dict[str, Any], name: str, b: int, live: int
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
        elif v is None and not f.required and f.kind in ("int", "int_or_tuple", "literal"):
            # An unset width that defaulted to ``name`` (dim_out = dim_out or dim) takes the
            # live one, or ``name`` moves and it keeps ``b``.
            yield {f.name: live}
            yield {name: live, f.name: b}


def _product(
    fields: list[Field], values: dict[str, Any], b: int, live: int, known: dict[str, Any]
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


def _quotient(
    fields: list[Field], values: dict[str, Any], b: int, live: int, known: dict[str, Any]
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


def _factories(
    fields: list[Field],
    values: dict[str, Any],
    child: Callable[[nn.Module], list[Any]],
    ancestors: list[nn.Module],
    built: str = "",
) -> Iterator[tuple[str, Any]]:
    """A layer made by a factory field: the live layer (or the block around it) again, its class
    with its own non-default values (norm_layer=partial(BatchNorm2d, eps=1e-3)). Layer by layer,
    the nearest first: the fields whose class the layer is, then the empty ones and those that
    hold the class the build made there (``built``, a class difference): every factory for a
    field named like the layer's class (conv_layer for StdConv2d), the first three for others."""
    for layer in ancestors:
        for unset in (False, True):
            for f in fields:
                v = values.get(f.name)
                c = _cls_of(v)
                if unset:
                    fit = (
                        v is None
                        and f.kind in ("class", "callable")
                        or (c is not None and layer is ancestors[0] and _qualname(c) == built)
                    )
                else:
                    fit = c is not None and isinstance(layer, c)
                if not fit:
                    continue
                word = stem(f.name)
                named = len(word) >= 3 and word in type(layer).__name__.lower()
                for made in child(layer)[: 3 if unset and not named else None]:
                    yield f.name, made


def _scaled(
    d: Difference, fields: list[Field], values: dict[str, Any]
) -> Iterator[tuple[str, Any]]:
    """A float attribute no field holds, derived as ``v * c`` (``scale = gamma * fan_in **
    -0.5``): a float field ``v`` becomes ``v * live / built``."""
    if not d.aspect.startswith("attr ") or d.live is None or d.built is None:
        return
    try:
        live, b = float(d.live), float(d.built)
    except ValueError:
        return
    if not b or live == b or "." not in d.live or any(values.get(f.name) == b for f in fields):
        return
    for f in fields:
        v = values.get(f.name)
        if type(v) is float and v and "drop" not in f.name:
            yield f.name, v * live / b


def _qualname(c: type) -> str:
    return f"{c.__module__}.{c.__qualname__}"


def _direct(
    d: Difference, fields: list[Field], values: dict[str, Any], target: nn.Module | None
) -> Iterator[tuple[str, Any]]:
    """The values a difference names: the live value where the build has the field's (or a
    relation of it), keyword items and attributes by name, classes."""
    yield from by_part(d, fields, values, target)
    kw = _keyword(d, target) or _attribute(d)
    if kw is not None:
        for f in fields:
            if _named(f, kw[0]):
                yield f.name, kw[1]
    for key, value in _members(d)[:MAX_PER_DIFF]:
        for f in fields:
            if _named(f, key):
                yield f.name, value

    if d.aspect == "class" and target is not None:
        live_cls = type(target)
        built_name = (d.built or "").rsplit(".", 1)[-1].lower()
        for f in fields:
            v = values.get(f.name)
            c = _cls_of(v)
            if c is not None and _qualname(c) == d.built:
                yield f.name, live_cls
            elif v is None and f.kind in ("class", "callable"):
                yield f.name, live_cls
            elif isinstance(v, str) and v and v.lower().replace("_", "") == built_name:
                # A layer named by a string (timm's act_layer="relu"): the live layer's name.
                yield f.name, live_cls.__name__.lower()
                yield f.name, live_cls
    count = 0
    for b, lv in _pairs(d):
        for f in fields:
            for x in _from_pair(f, values.get(f.name), b, lv):
                yield f.name, x
                count += 1
        if count > MAX_PER_DIFF:
            break
    yield from _scaled(d, fields, values)


def _generic(
    d: Difference,
    fields: list[Field],
    values: dict[str, Any],
    target: nn.Module | None,
    child: Callable[[nn.Module], list[Any]] | None,
    ancestors: list[nn.Module],
) -> Iterator[tuple[str, Any]]:
    """The changes a difference allows without naming a value: flags, None, defaults, keyword
    dicts, factories."""
    kw = _keyword(d, target) or _attribute(d)
    if d.aspect == "module" or d.aspect.startswith("attr") or d.aspect == "children":
        present = target if d.live is not None else None
        for f in fields:
            v = values.get(f.name)
            if flag_like(f):
                yield f.name, not v
            elif v is not None and not f.required:
                yield f.name, None
            elif v is None and present is not None and f.kind in ("class", "callable"):
                yield f.name, type(present)
            if not f.required and v is not f.default and not flag_like(f):
                yield f.name, f.default
    if kw is not None and d.path and not kw[0].startswith("_"):
        for f in fields:
            # A dict of keywords handed on to a layer (norm_kwargs=dict(eps=1e-3)): the live
            # value under its name, added to what the dict holds.
            v = values.get(f.name)
            if f.name.endswith("kwargs") and (v is None or isinstance(v, dict)):
                yield f.name, {**(v or {}), kw[0]: kw[1]}
    made_there = d.aspect == "class" or d.aspect == "module" and d.live is not None
    if child is not None and (d.aspect.startswith(("repr", "attr")) or made_there):
        # Last: a factory costs a child form, and the plain values above are likelier.
        built = d.built or "" if d.aspect == "class" else ""
        yield from _factories(fields, values, child, ancestors, built)


def proposals(
    diffs: list[Difference],
    fields: list[Field],
    values: dict[str, Any],
    live: nn.Module,
    child: Callable[[nn.Module], list[Any]] | None = None,
    known: dict[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Changes to try (one field, or a few that move together), those of the first differences
    first. ``child(module)`` gives factories for a live layer (its class with its own values);
    ``known`` holds the values of the fields not searched (widths a relation may read)."""
    by_path = dict(live.named_modules())
    seen = {**(known or {}), **values}
    inner = nested(original_class(type(live)), fields, values)

    def of(i: int, d: Difference) -> Iterator[dict[str, Any]]:
        bits = d.path.split(".") if d.path else []
        ups = [by_path.get(".".join(bits[:n])) for n in range(len(bits), 0, -1)]
        layers = [m for m in ups if m is not None][:3]
        if d.aspect == "children":
            # Before the one-field changes: those of a depth alone fail to build.
            for b, lv in _pairs(d):
                yield from per_block(fields, values, b, lv)
        target = by_path.get(d.path)
        for one in _direct(d, fields, values, target):
            yield dict([one])
        # Moves of a few fields together, before the generic single changes: the first change
        # that scores better is taken, and a width moved alone is often a step away.
        for b, lv in _pairs(d) if i < 4 else []:
            if type(b) is not int or type(lv) is not int or not lv:
                continue
            yield from _quotient(fields, values, b, lv, seen)
            yield from _product(fields, values, b, lv, seen)
            for f in fields:
                if type(values.get(f.name)) is int and values[f.name] == b:
                    yield from _keeping(fields, values, f.name, b, lv)
            for f in fields:
                if values.get(f.name) == b and type(b) is type(values[f.name]):
                    # One width per layer where the module kept one of them (out_chs[-1]).
                    if f.kind in ("int", "int_or_tuple"):
                        yield from ({f.name: (lv, b)}, {f.name: (b, lv)})
        # The same rules on the members of a dataclass argument, one member at a time.
        for n in inner:
            for name, v in _direct(d, n.fields, n.values, target):
                change = n.change(name, v)
                if change is not None:
                    yield change
        for one in _generic(d, fields, values, target, child, layers):
            yield dict([one])
        for n in inner:
            for name, v in _generic(d, n.fields, n.values, target, child, layers):
                change = n.change(name, v)
                if change is not None:
                    yield change

    for i, d in enumerate(diffs):
        yield from of(i, d)
