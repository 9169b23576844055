"""The one input of every rule (``_forms/candidates/rules/__init__.py``): a ``Problem``, one difference
between a build and the live module with what the rules read it against, and the readings of
the difference's text that several rules share (numbers, quoted strings, keyword items).

A rule is ``propose(p: Problem) -> Iterator[dict[str, Any]]``: each proposal is a change of a few
fields (field name -> new value), tried by building (``_forms/candidates/infer.py``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ...._signature import resolve
from ...field import Field
from ...rebuild.compare import Difference
from ...sources.usage import Usage, usage

__all__ = [
    "Opening",
    "Problem",
    "Propose",
    "cls_of",
    "flag_like",
    "may_scale",
    "named",
    "numbers",
    "qualname",
    "stem",
    "use_of",
]

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")
_QUOTED = re.compile(r"'([^']*)'")
_PARSE_ERRORS = (ValueError, SyntaxError, TypeError, MemoryError, RecursionError)


@dataclass(frozen=True)
class Problem:
    """One difference (``diff``, the ``index``-th of the build's, 0 first) and what it is read
    against: the fields searched and their ``values``, the live layer at the difference's path
    (``target``) and up to three layers around it, nearest first (``layers``), the strings each
    string field's code compares it with (``modes``), every field's value including those not
    searched (``seen``: widths a relation may read), ``child(layer)``: the factories that
    make a live layer again (its class with its own values; None where no child form is open),
    and how the constructor uses each field (``uses``, ``_forms/sources/usage.py``).
    The members of a dataclass argument are a ``Problem`` of their own (``_forms/candidates/members.py``).
    """

    diff: Difference
    index: int
    fields: Sequence[Field]
    values: Mapping[str, Any]
    target: nn.Module | None = None
    layers: Sequence[nn.Module] = ()
    modes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    seen: Mapping[str, Any] = field(default_factory=dict)
    child: Callable[[nn.Module], list[Any]] | None = None
    uses: Mapping[str, Usage] = field(default_factory=dict)
    owner: type | None = None  # the class searched (its ``__init__``'s code: ``branch_layer.py``)

    @functools.cached_property
    def pairs(self) -> list[tuple[Any, Any]]:
        """(built, live) values at the same place of the two texts, where they differ; for a
        container with more or fewer blocks, its two lengths (a depth)."""
        d = self.diff
        if d.live is None or d.built is None:
            return []
        if d.aspect == "children":
            na, nb = (len([n for n in t.split(", ") if n]) for t in (d.built, d.live))
            return [(na, nb)] if na != nb else []
        out: list[tuple[Any, Any]] = []
        finders: tuple[Callable[[str], list[Any]], ...] = (numbers, _QUOTED.findall)
        for find in finders:
            a, b = find(d.built), find(d.live)
            if len(a) == len(b):
                out += [(x, y) for x, y in zip(a, b) if x != y or type(x) is not type(y)]
        return out

    @functools.cached_property
    def keyword(self) -> tuple[str, Any] | None:
        """(name, live value) of a ``name=value`` repr item (a live module whose repr leaves the
        item out holds its class's default), or of an attribute the build sets to another
        literal."""
        return _keyword(self.diff, self.target) or _attribute(self.diff)


Propose = Callable[[Problem], Iterator[dict[str, Any]]]


class Opening(dict[str, Any]):
    """A change that opens a branch of the constructor (a flag with the widths of the layer it
    makes): the parts it fixes may first need another field moved (a count of blocks beside the
    layer), so where it scores no better the search looks one step past it (``loop.py``)."""


def numbers(text: str) -> list[int | float]:
    out: list[int | float] = []
    for tok in _NUMBER.findall(text):
        try:
            out.append(int(tok))
        except ValueError:
            out.append(float(tok))
    return out


def _keyword(d: Difference, target: nn.Module | None) -> tuple[str, Any] | None:
    if not d.aspect.startswith("repr ") or d.aspect[5:].isdigit():
        return None
    name = d.aspect[5:]
    if d.live is not None:
        text = d.live.split("=", 1)[1]
        try:
            return name, ast.literal_eval(text)
        except _PARSE_ERRORS:
            # A string formatted without quotes (torch's convs print padding=same).
            return (name, text) if text.isidentifier() else None
    if target is None:
        return None
    try:
        p = resolve(type(target)).parameters.get(name)
    except (TypeError, ValueError):
        return None
    if p is None or p.default is p.empty:
        return None
    return name, p.default


def literal(text: str) -> str:
    """The parts' text of a sequence as a Python literal: ``tuple(0, 0)`` -> ``(0, 0,)``,
    ``list(1, 2)`` -> ``[1, 2]`` (``_forms/rebuild/parts.py`` names the type of every sequence)."""
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


def _attribute(d: Difference) -> tuple[str, Any] | None:
    if not d.aspect.startswith("attr ") or d.live is None:
        return None
    try:
        return d.aspect[5:], ast.literal_eval(literal(d.live))
    except _PARSE_ERRORS:
        return None


def parse_literal(text: str) -> Any:
    """The value a parts' text holds, or None where it is no literal."""
    try:
        return ast.literal_eval(literal(text))
    except _PARSE_ERRORS:
        return None


def cls_of(v: Any) -> type | None:
    """The class a field's value makes: the class itself, or a partial of it."""
    if isinstance(v, type):
        return v
    if isinstance(v, functools.partial) and isinstance(v.func, type):
        return v.func
    return None


def qualname(c: type) -> str:
    return f"{c.__module__}.{c.__qualname__}"


def flag_like(f: Field) -> bool:
    return f.kind == "bool" or isinstance(f.value, bool)


def may_scale(name: str) -> bool:
    """Whether a float field may scale a width: a dropout probability scales none, and skipping
    it by name spends a rule's few tries on the floats that can."""
    return "drop" not in name


def stem(name: str) -> str:
    """A parameter's name without the words that say how it is given (``conv_layer`` -> conv)."""
    for end in ("_layer", "_cls", "_fn", "_module", "_type"):
        name = name.removesuffix(end)
    for start in ("use_", "add_", "with_", "has_"):
        name = name.removeprefix(start)
    return name


def named(f: Field, key: str) -> bool:
    """Whether field ``f`` is named for ``key`` (an attribute's or a repr item's name)."""
    name = f.name.rpartition(".")[2]  # a config's field by its own name
    key = key.lstrip("_")  # a private attribute keeps its parameter's value (_pre_nms_top_n)
    return name == key or name.endswith("_" + key) or name.startswith(key + "_")


def handed_at(p: Problem, kind: type) -> list[Any]:
    """The readings of ``kind`` (``Sum``, ``Product``: a width handed to a layer) that the
    constructor hands to the layer at the difference's path or one around it, each once."""
    out: dict[Any, None] = {}
    for u in p.uses.values():
        for s in u.sums:
            kept = getattr(s, "kept", "")
            if isinstance(s, kind) and (p.diff.path == kept or p.diff.path.startswith(kept + ".")):
                out[s] = None
    return list(out)


def use_of(p: Problem, name: str) -> Usage | None:
    """How the constructor uses field ``name``: from ``p.uses``, or for a member of a dict or a
    namespace (``cfg.STAGE_DIMS``, which the leads read no use of) read through its argument
    (``usage(cls, "cfg", ("STAGE_DIMS",))``: ``dims = cfg["STAGE_DIMS"]`` then ``len(dims)``)."""
    u = p.uses.get(name)
    if u is None and "." in name and p.owner is not None:
        root, *path = name.split(".")
        u = usage(p.owner, root, tuple(path))
    return u
