"""Stage 3 of a form (``forms.py`` runs the stages): the search that assembles full argument sets
from the sources' readings and tries them by building.

``search(draft, leads, budget, child)`` starts from the draft values (stage 2), tries the fields
that are guesses first and, if that rebuild is not exact, a wider set (those read from attributes
or derived, which may hold a transformed value), within the form's work budget
(``_forms/budget.py``). Each try builds the class on meta and scores the build against the live
module (``_forms/rebuild/``); the rules of ``rules/`` read each difference for the next
proposals (``guide.py``), each field's candidates (stage 2's pools) come next, and what a failed
build's message teaches adds to them (``failed.py``). The loop is ``loop.py``, its outcome
``infer.py``, its constants ``tuning.py``. A field the search moved that its draft value rebuilds
as exactly is put back (``ambiguous.py``): the gate cannot tell them apart.

It hands down a plain ``Found``; stage 4 (``_forms/exact/``) decides what the form says.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..._unwrap import torch_own
from ..bind import bind
from ..budget import Budget
from ..field import Child, Field, guessed
from ..rebuild.real import small
from ..record import snapshot
from ..sources import Draft, Leads
from ..sources.nested import Group
from ..validate import may_try
from .ambiguous import settle
from .factories import factory as layer_factories
from .infer import Inferred, infer
from .tuning import CHILD_SLACK, LAST_BUILD_SLACK

__all__ = ["Found", "assemble", "search"]


@dataclass
class Found:
    """What the search hands down: its answer for the best build (``inferred``: the values, the
    build's check, how many builds, why it stopped), the fields it looked for first
    (``looked_for``: the guesses), the fields whose draft value rebuilds as exactly as the value
    found (``rivals``: field -> the value not kept), and whether the form's safety ceiling
    stopped a build (``stopped``)."""

    inferred: Inferred
    looked_for: list[str]
    rivals: dict[str, Any]
    stopped: bool


def assemble(groups: list[Group], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with each config argument made from its members' values (which are dropped),
    innermost first: a namespace, a dict read by keys (``sources/keyed.py``) or a config class."""
    out = dict(values)
    for g in reversed(groups):
        kwargs = {s.rpartition(".")[2]: out.pop(s) for s in g.subs if s in out}
        # A key its constructor tests (``"k" in cfg``) is left out where None (``keyed.py``).
        drop = {s.rpartition(".")[2] for s in g.optional}
        out[g.name] = g.cls(**{k: v for k, v in kwargs.items() if k not in drop or v is not None})
    return out


def _shown(leads: Leads) -> frozenset[str]:
    """The arguments handed to a torch layer, whose repr shows them (a width, a kernel): the
    builds prove those. One handed only to layers of the user's is not: such a layer may keep it
    where no part shows it (a GAN handing ``img_size`` to blocks that read ``int(log2(...))``:
    16 and 24 build alike), so the settling tries it one off as any unshown number."""
    return frozenset(n for n, u in leads.uses.items() if any(torch_own(h.callee) for h in u.handed))


def _widen(fields: list[Field]) -> list[Field]:
    """The guessed fields, then those read from attributes or derived (they may hold a value the
    constructor transformed, or one a later argument overrides), then the layers held under a
    parameter's name (the constructor may have been given their class)."""
    first = [f for f in fields if guessed(f)]
    rest = [
        f
        for f in fields
        if f not in first
        and f.origin in ("attribute", "derived")
        and f.kind not in ("varargs", "varkw", "config")
        and f.name not in ("device", "dtype")
    ]
    return first + sorted(rest, key=lambda f: isinstance(f.value, nn.Module))


def search(d: Draft, leads: Leads, budget: Budget, child: Child) -> Found:
    """Values for the draft's guessed fields that rebuild its module exactly (see the module
    doc). ``budget`` is the form's (its ``parent``, a parent form's: a child form's first build
    stops where its parent's budget ends); ``child`` opens a layer's own form."""
    ctor = d.constructor
    cls, sig, module = ctor.cls, ctor.signature, ctor.module
    assert module is not None
    fields = leads.fields
    base = {f.name: f.value for f in fields}
    if "device" in base:
        base["device"] = torch.device("meta")  # an explicit device would beat the meta context
    if leads.spread is not None and leads.kept:
        base[leads.spread] = leads.kept

    def make(changes: dict[str, Any]) -> nn.Module:
        bound = bind(sig, d.fields, assemble(leads.groups, {**base, **changes}))
        # Copies: a constructor may set fields of the config it is given (T5Stack's use_cache),
        # and the candidates are the live model's own objects.
        args, kwargs = snapshot(bound.args, bound.kwargs)
        return typing.cast(nn.Module, cls(*args, **kwargs))

    fits = functools.partial(may_try, leads.infos)
    made: dict[int, list[Any]] = {}

    def factory(layer: nn.Module) -> list[Any]:
        if id(layer) not in made:
            made[id(layer)] = [] if budget.out else layer_factories(layer, child)
        return made[id(layer)]

    first = [f for f in fields if guessed(f)]
    # The first build (the form's own values) is not bounded by the budget (only by the
    # ceiling); a child form's, by what its parent has left.
    outer = budget.parent
    stop = outer.left + CHILD_SLACK if outer is not None else float("inf")
    wide = _widen(fields)
    alone = len(wide) <= len(first)  # no wider search follows this one
    found = infer(module, fields, first, fits, make, budget, leads, sig, factory, stop, alone)
    if not found.exact and not alone and not budget.out:
        # Its first build is a search's build like any other: it ends with the search.
        last = min(stop, budget.left + LAST_BUILD_SLACK)
        again = infer(
            module, fields, wide, fits, make, budget, leads, sig, factory, last, True, found.values
        )
        if again.exact:
            found = again
    # A field the search moved that its draft value rebuilds as exactly proves nothing: it keeps
    # the draft, flagged (``ambiguous.py``). One build per field moved: bounded by the fields,
    # not the budget (a form must say the same of them on every call).
    rivals: dict[str, Any] = {}
    if found.exact:
        real_ok = small(module)  # as the search built it (``_forms/rebuild/real.py``)
        sums = dict.fromkeys(s for u in leads.uses.values() for s in u.sums)
        flags = frozenset(n for n, u in leads.uses.items() if u.condition)
        # A namespace's or a dict's members too (``sources/nested.py``): a member the search
        # moved that builds as exactly otherwise is no more proven than an argument. Not a
        # config class's: its form is read whole by the model around it (``blocklists.py``:
        # torchvision's InvertedResidualConfig, whose width_mult 1.0 a hair away builds alike).
        spaces = {g.name for g in leads.groups if g.cls in (dict, types.SimpleNamespace)}
        members = [f for f in fields if f.name.rpartition(".")[0] in spaces]
        iterated = frozenset(n for n, u in leads.uses.items() if u.sequence)
        # A loop's count ``range(x - 1)`` that made no layer: every x up to 1 rebuilds alike, so
        # it is tried one below too, as a number read only in tests is (``ambiguous.py``).
        counted = frozenset(n for n, u in leads.uses.items() if u.counts)
        rivals = settle(
            [*d.fields, *members],
            found.values, make, leads.live, leads.dtype, budget, real_ok, sums, flags, leads.alike,
            leads.remainders, iterated, leads.tested | counted,
            _shown(leads),
        )  # fmt: skip
    if found.exact and leads.spread is not None and leads.kept:
        found.values[leads.spread] = leads.kept
    if found.exact and leads.groups:
        made_cfg = assemble(leads.groups, {**base, **found.values})
        found.values.update({n: made_cfg[n] for n in leads.configs})
    return Found(found, [f.name for f in first], rivals, budget.stopped)
