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
  default), flags their opposite, class fields the live submodule's class.
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

from .exact import Difference
from .field import Field

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


def _int_moves(v: int, b: int, live: int) -> Iterator[int]:
    if v == b:
        yield live
    if v and b % v == 0 and b // v > 1 and live % (b // v) == 0:
        yield live // (b // v)  # b = k * v
    if b and v % b == 0 and v // b > 1:
        yield live * (v // b)  # b = v / k
    if b != v and abs(b - v) <= 8:
        yield live - (b - v)  # b = v + k
    for extra in (0, 1):
        # A grid: b = (v / k) ** 2 (+ 1 for a class token): patches of an image side.
        s, t = math.isqrt(max(b - extra, 0)), math.isqrt(max(live - extra, 0))
        if s > 1 and s * s == b - extra and t * t == live - extra and v % s == 0:
            yield t * (v // s)


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
        try:
            return name, ast.literal_eval(d.live.split("=", 1)[1]), True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
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


def _named(f: Field, key: str) -> bool:
    name = f.name.rpartition(".")[2]  # a config's field by its own name
    return name == key or name.endswith("_" + key) or name.startswith(key + "_")


def _flag_like(f: Field) -> bool:
    return f.kind == "bool" or isinstance(f.value, bool)


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
        elif type(v) is int and v > 1 and (v * b) % live == 0:
            yield {name: live, f.name: v * b // live}
        elif v is None and not f.required and f.kind in ("int", "int_or_tuple", "literal"):
            yield {name: live, f.name: b}


def _product(
    fields: list[Field], values: dict[str, Any], b: int, live: int
) -> Iterator[dict[str, Any]]:
    """``b = w * r`` for a width ``w`` and a ratio ``r`` (mlp hidden = dim * mlp_ratio): ``r``
    becomes ``live / w``."""
    for fr in fields:
        r = values.get(fr.name)
        if type(r) is not float or not r or "drop" in fr.name:
            continue
        for fw in fields:
            w = values.get(fw.name)
            if type(w) is int and w > 0 and math.isclose(w * r, b) and _nice(live / w):
                yield {fr.name: live / w}


def _quotient(
    fields: list[Field], values: dict[str, Any], b: int, live: int
) -> Iterator[dict[str, Any]]:
    """``b = W / v`` (head_dim = dim / num_heads): ``v`` becomes ``W / live``."""
    ints = [(f.name, values[f.name]) for f in fields if type(values.get(f.name)) is int]
    for w_name, w in ints:
        for v_name, v in ints:
            if v_name != w_name and v > 0 and w % v == 0 and w // v == b and w % live == 0:
                yield {v_name: w // live}


def _factories(
    fields: list[Field],
    values: dict[str, Any],
    child: Callable[[nn.Module], list[Any]],
    ancestors: list[nn.Module],
) -> Iterator[tuple[str, Any]]:
    """A layer made by a factory field: the live layer (or the block around it) again, its class
    with its own non-default values (norm_layer=partial(BatchNorm2d, eps=1e-3)); the fields whose
    class the layer is first, then the empty factory fields."""
    for unset in (False, True):
        for layer in ancestors:
            for f in fields:
                v = values.get(f.name)
                if unset:
                    fit = v is None and f.kind in ("class", "callable")
                else:
                    c = _cls_of(v)
                    fit = c is not None and isinstance(layer, c)
                if fit:
                    # An empty factory field takes the layer's class as its own form has it
                    # (the first two); one of the layer's class also tries it keyword by keyword.
                    for made in child(layer)[: 2 if unset else None]:
                        yield f.name, made


def _singles(
    d: Difference,
    fields: list[Field],
    values: dict[str, Any],
    target: nn.Module | None,
    child: Callable[[nn.Module], list[Any]] | None,
    ancestors: list[nn.Module],
) -> Iterator[tuple[str, Any]]:
    kw = _keyword(d, target) or _attribute(d)
    if kw is not None:
        for f in fields:
            if _named(f, kw[0]):
                yield f.name, kw[1]

    if d.aspect == "class" and target is not None:
        live_cls = type(target)
        built_name = (d.built or "").rsplit(".", 1)[-1].lower()
        for f in fields:
            v = values.get(f.name)
            c = _cls_of(v)
            if c is not None and f"{c.__module__}.{c.__qualname__}" == d.built:
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
            if values.get(f.name) is None and f.optional and f.kind == "int" and type(lv) is int:
                yield f.name, lv  # a width left to default to another (stem_chs=None)
        if count > MAX_PER_DIFF:
            break
    if d.aspect == "module" or d.aspect.startswith("attr") or d.aspect == "children":
        present = target if d.live is not None else None
        for f in fields:
            v = values.get(f.name)
            if _flag_like(f):
                yield f.name, not v
            elif v is not None and not f.required:
                yield f.name, None
            elif v is None and present is not None and f.kind in ("class", "callable"):
                yield f.name, type(present)
            if not f.required and v is not f.default and not _flag_like(f):
                yield f.name, f.default
    if kw is not None and d.path and not kw[0].startswith("_"):
        for f in fields:
            # A dict of keywords handed on to a layer (norm_kwargs=dict(eps=1e-3)): the live
            # value under its name, added to what the dict holds.
            v = values.get(f.name)
            if f.name.endswith("kwargs") and (v is None or isinstance(v, dict)):
                yield f.name, {**(v or {}), kw[0]: kw[1]}
    if child is not None and (d.aspect.startswith(("repr", "attr")) or d.aspect == "class"):
        # Last: a factory costs a child form, and the plain values above are likelier.
        yield from _factories(fields, values, child, ancestors)


def proposals(
    diffs: list[Difference],
    fields: list[Field],
    values: dict[str, Any],
    live: nn.Module,
    child: Callable[[nn.Module], list[Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Changes to try (one field, or a few that move together), those of the first differences
    first. ``child(module)`` gives factories for a live layer (its class with its own values)."""
    by_path = dict(live.named_modules())

    def of(i: int, d: Difference) -> Iterator[dict[str, Any]]:
        bits = d.path.split(".") if d.path else []
        ups = [by_path.get(".".join(bits[:n])) for n in range(len(bits), 0, -1)]
        layers = [m for m in ups if m is not None][:3]
        for one in _singles(d, fields, values, by_path.get(d.path), child, layers):
            yield dict([one])
        if i >= 4:
            return
        for b, lv in _pairs(d):
            if type(b) is not int or type(lv) is not int or not lv:
                continue
            yield from _quotient(fields, values, b, lv)
            yield from _product(fields, values, b, lv)
            for f in fields:
                if type(values.get(f.name)) is int and values[f.name] == b:
                    yield from _keeping(fields, values, f.name, b, lv)

    for i, d in enumerate(diffs):
        yield from of(i, d)
