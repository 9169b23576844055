"""Values a difference suggests: the search's first proposals (``_forms/infer.py``).

A build with the current values differs from the live module in some parts
(``_forms/exact.py``). Each difference is read for what would explain it, with no rule per class:

- numbers: the built text holds ``b`` where the live one holds ``l`` (``GroupNorm(32, 32)`` vs
  ``GroupNorm(8, 32)``; ``Linear(32, 64)`` vs ``Linear(32, 128)``). A field whose value ``v`` is
  ``b`` is proposed ``l``; one with ``b = k * v`` is proposed ``l / k``, ``b = v + k`` gives
  ``l - k`` (``proj.out_features = 2 * dim_out``); tuples are changed element by element; the
  relations and the moves of several fields are in ``_forms/numbers.py``;
- strings and floats the same way (``eps=1e-06`` vs ``eps=1e-05``; ``'gelu'`` vs ``'silu'``);
- a class: a field holding the built class (or a partial of it) is proposed the live one, an
  element of a per-layer tuple of classes the live one or None; a string that named the built
  class the other strings its code compares it with (``_forms/literals.py``);
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
import re
from collections.abc import Callable, Iterator
from typing import Any

from torch import nn

from .._unwrap import original_class
from .exact import Difference
from .field import Field
from .gated import unset_width
from .handed import handed_dicts
from .literals import compared_strings
from .members import nested
from .numbers import from_pair, item_runs, keeping, product, quotient, scaled, summed
from .presence import by_part, flag_like, numbered, per_block, stem

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
    name = f.name.rpartition(".")[2]  # a config's field by its own name
    key = key.lstrip("_")  # a private attribute keeps its parameter's value (_pre_nms_top_n)
    return name == key or name.endswith("_" + key) or name.startswith(key + "_")


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


def _per_layer(f: Field, v: Any, built: str, live_cls: type) -> Iterator[tuple[str, Any]]:
    """One class per layer (``act_layer=(nn.ReLU6, None)``): the element that made the built
    layer becomes the live one's class, or None where the live layer is an Identity (no layer
    there); a single class of such a field becomes a pair."""
    gone = live_cls is nn.Identity
    if isinstance(v, tuple) and v and any(_cls_of(x) is not None for x in v):
        at = [i for i, x in enumerate(v) if (c := _cls_of(x)) is not None and _qualname(c) == built]
        for i in at:
            swap = None if gone else live_cls
            yield f.name, tuple(swap if j == i else x for j, x in enumerate(v))
    elif (c := _cls_of(v)) is not None and _qualname(c) == built and gone:
        if isinstance(f.default, tuple):
            yield from ((f.name, (v, None)), (f.name, (None, v)))


def _qualname(c: type) -> str:
    return f"{c.__module__}.{c.__qualname__}"


def _direct(
    d: Difference,
    fields: list[Field],
    values: dict[str, Any],
    target: nn.Module | None,
    modes: dict[str, tuple[str, ...]] | None = None,
) -> Iterator[tuple[str, Any]]:
    """The values a difference names: the live value where the build has the field's (or a
    relation of it), keyword items and attributes by name, classes; ``modes``: the strings a
    string field's code compares it with (``_forms/literals.py``)."""
    yield from by_part(d, fields, values, target)
    yield from unset_width(d, fields, values)
    kw = _keyword(d, target) or _attribute(d)
    if kw is not None:
        for f in fields:
            if _named(f, kw[0]):
                yield f.name, kw[1]
            v = values.get(f.name)
            if isinstance(v, functools.partial) and kw[0] in v.keywords:
                # A factory read off one layer holds what its call passed (stride=2 for the
                # one that downsamples): without it, each call passes its own or the default.
                rest = {k: x for k, x in v.keywords.items() if k != kw[0]}
                yield f.name, functools.partial(v.func, *v.args, **rest)
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
            yield from _per_layer(f, v, d.built or "", live_cls)
            if isinstance(v, str) and len(v) > 1 and v.lower() in built_name:
                # The mode the string chose made the built class (DownsampleAvg for "avg"):
                # the other modes its code knows.
                yield from ((f.name, m) for m in (modes or {}).get(f.name, ()) if m != v)
    count = 0
    for b, lv in _pairs(d):
        for f in fields:
            for x in from_pair(f, values.get(f.name), b, lv):
                yield f.name, x
                count += 1
            if values.get(f.name) is None and f.optional and f.kind == "int" and type(lv) is int:
                yield f.name, lv  # a width left to default to another (stem_chs=None)
        if count > MAX_PER_DIFF:
            break
    yield from scaled(d, fields, values)


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
        yield from handed_dicts(fields, values, child, ancestors)
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
    cls = original_class(type(live))
    modes = {f.name: compared_strings(cls, f.name) for f in fields if f.kind == "str"}
    inner = nested(cls, fields, values)

    def of(i: int, d: Difference) -> Iterator[dict[str, Any]]:
        bits = d.path.split(".") if d.path else []
        ups = [by_path.get(".".join(bits[:n])) for n in range(len(bits), 0, -1)]
        layers = [m for m in ups if m is not None][:3]
        if d.aspect == "children":
            # Before the one-field changes: those of a depth alone fail to build.
            for b, lv in _pairs(d):
                yield from per_block(fields, values, b, lv)
        yield from numbered(d, fields, values)
        if d.live is not None and d.built is not None and d.aspect != "children":
            yield from item_runs(fields, values, _numbers(d.built), _numbers(d.live))
        target = by_path.get(d.path)
        for one in _direct(d, fields, values, target, modes):
            yield dict([one])
        # Moves of a few fields together, before the generic single changes: the first change
        # that scores better is taken, and a width moved alone is often a step away.
        # A container's count of blocks is a depth (per_block above), no width a relation reads.
        for b, lv in _pairs(d) if i < 4 and d.aspect != "children" else []:
            if type(b) is not int or type(lv) is not int or not lv:
                continue
            yield from quotient(fields, values, b, lv, seen)
            yield from product(fields, values, b, lv, seen)
            yield from summed(fields, values, b, lv, seen)
            for f in fields:
                if type(values.get(f.name)) is int and values[f.name] == b:
                    yield from keeping(fields, values, f.name, b, lv)
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
