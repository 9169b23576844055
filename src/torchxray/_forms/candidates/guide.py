"""Values a difference suggests: the search's first proposals (``loop.py``).

A build with the current values differs from the live module in some parts
(``_forms/rebuild/compare.py``). Each difference, the first first, is read by the rules of
``rules/`` in their registry's order (``RULES``): the module's own fields, and the members of a
dataclass argument (``members.py``) one at a time, by the same rules. No rule names a class.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from torch import nn

from ..field import Field
from ..rebuild.compare import Difference
from ..sources.usage import Usage
from .members import Nested, nested
from .rules import RULES, Problem

__all__ = ["problems", "proposals"]

# The registry as runs of rules of one scope, in order: a run on the members reads each member's
# problem through the whole run before the next member's.
_RUNS = [
    (scope, [r.propose for r in run]) for scope, run in itertools.groupby(RULES, lambda r: r.scope)
]


def proposals(
    diffs: list[Difference],
    fields: list[Field],
    values: dict[str, Any],
    live: nn.Module,
    sig: inspect.Signature,
    modes: Mapping[str, tuple[str, ...]],
    child: Callable[[nn.Module], list[Any]] | None = None,
    known: dict[str, Any] | None = None,
    uses: Mapping[str, Usage] | None = None,
    last: bool = False,
) -> Iterator[dict[str, Any]]:
    """Changes to try (one field, or a few that move together), those of the first differences
    first; with ``last``, those of the rules the search tries only once these fail (the
    registry's ``last`` scope: two fields moved together). ``sig`` is the constructor's
    signature, ``modes`` the strings each string field is compared with (stage 2 read them);
    ``child(module)`` gives factories for a live layer (its class with its own values);
    ``known`` holds the values of the fields not searched (widths a relation may read); ``uses``
    says how the constructor uses each field (stage 2 read it)."""
    inner = nested(sig, fields, values)
    read = problems(diffs, fields, values, live, modes, child, known, uses)
    if last:
        # Each of the last rules over every difference before the next: the likeliest pairs of
        # every difference first (``rules/__init__.py``).
        tops = list(read)
        for scope, run in _RUNS:
            for propose in run if scope == "last" else ():
                for top in tops:
                    yield from _guarded(propose, top)
        return
    for top in read:
        for scope, run in _RUNS:
            if scope == "module":
                for propose in run:
                    yield from _guarded(propose, top)
            elif scope == "members":
                yield from _on_members(top, inner, run)


def _guarded(
    propose: Callable[[Problem], Iterator[dict[str, Any]]], p: Problem
) -> Iterator[dict[str, Any]]:
    """A rule's proposals, ended where the rule itself fails. A rule reads values of any kind a
    person passed (a sequence type whose ``len`` is 0 while it is true), and its failure on one
    is torchxray's: it ends that rule's proposals for this difference, never the form (which
    refuses in a sentence at worst)."""
    try:
        yield from propose(p)
    except Exception:  # noqa: BLE001 - see the docstring
        return


def problems(
    diffs: list[Difference],
    fields: list[Field],
    values: dict[str, Any],
    live: nn.Module,
    modes: Mapping[str, tuple[str, ...]],
    child: Callable[[nn.Module], list[Any]] | None = None,
    known: dict[str, Any] | None = None,
    uses: Mapping[str, Usage] | None = None,
) -> Iterator[Problem]:
    """One ``Problem`` per difference, in order: the live layer at its path, the layers around
    it, the strings each string field is compared with (``proposals`` gives the arguments)."""
    by_path = dict(live.named_modules())
    seen = {**(known or {}), **values}
    modes = {f.name: modes.get(f.name, ()) for f in fields if f.kind == "str"}
    uses = uses or {}
    for i, d in enumerate(diffs):
        bits = d.path.split(".") if d.path else []
        ups = [by_path.get(".".join(bits[:n])) for n in range(len(bits), 0, -1)]
        layers = [m for m in ups if m is not None][:3]
        target = by_path.get(d.path)
        yield Problem(d, i, fields, values, target, layers, modes, seen, child, uses, type(live))


def _on_members(
    top: Problem, inner: list[Nested], run: list[Callable[[Problem], Iterator[dict[str, Any]]]]
) -> Iterator[dict[str, Any]]:
    """The run's proposals for each dataclass argument's members, as changes of the argument."""
    for n in inner:
        p = dataclasses.replace(top, fields=n.fields, values=n.values, modes={}, uses={})
        for propose in run:
            for change in _guarded(propose, p):
                made = n.change(change)
                if made is not None:
                    yield made
