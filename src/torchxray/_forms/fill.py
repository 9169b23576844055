"""Guessed fields replaced by values a meta build confirms (``fill``): the search of
``_forms/infer.py`` run over a form's draft fields, or the hint that says why it failed."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import typing
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .._gc import pause, resume
from .ambiguous import note, settle
from .bind import bind
from .blocklists import FORM
from .budget import BUDGET, CEILING_NOTE, Budget
from .check import check_type
from .exact import Check, floating_dtype
from .field import Field
from .handed import handed
from .infer import Inferred, guessed, infer
from .kinds import KindInfo
from .make import make_field, same
from .named_factory import started_from
from .nested import nest
from .parts import Parts, parts
from .record import snapshot
from .tuning import CEILING_SECONDS, CHILD_SLACK, LAST_BUILD_SLACK, SEARCH_WORK

__all__ = ["fill"]


# A form is a pure function of the module: the same on every call, in any order with other forms.
# So nothing a search finds outlives its form here (no table of values that rebuilt an identical
# block: a second search started from them, less the factories they held, ended elsewhere and
# emptied fields the first had proven). A form opened many times for one state of a model is
# kept by its owner instead (``_forms/cache.py``). The budget shared with child forms lives in a
# context variable (``_forms/budget.py``), set and reset by each form: it is state of the call,
# not of the process, and counted in work, not seconds, so the load of the machine changes nothing.
_NOT_PASSED = ("device", "dtype")


def _keywords(
    layer: nn.Module, form: Callable[[nn.Module], Any]
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(required, keyword values that are not the defaults) of ``layer``'s exact form; None when
    its form is not exact. ``form`` is ``tx.form`` (forms.py passes it: this module serves
    forms.py and does not import it)."""
    try:
        f = form(layer)
        if f.inexact and not f.check.typed:  # a quantized weight: the values are still right
            return None
    except Exception:  # noqa: BLE001 - a layer without a readable form gives no factory
        return None
    plain = [x for x in f.fields if not x.group and x.kind not in ("varargs", "varkw")]
    kw = {
        x.name: x.value
        for x in plain
        if not x.required
        and x.name not in _NOT_PASSED
        and x.origin != "default"
        and not same(x.value, x.default)
    }
    return {x.name: x.value for x in plain if x.required}, kw


def _factory(layer: nn.Module, form: Callable[[nn.Module], Any]) -> list[Any]:
    """Factories that make ``layer`` again: its class with the keyword values its own exact form
    found that are not the defaults (``partial(BatchNorm2d, eps=0.001)``), the same with its
    required values but the first (the width a parent passes: ``partial(SpatialGatingUnit,
    seq_len=196)``), then those keywords alone and in pairs; none when its form is not exact."""
    found = _keywords(layer, form)
    if found is None:
        return []
    required, kw = found
    cls = type(layer)
    out: list[Any] = [functools.partial(cls, **kw) if kw else cls]
    if len(required) > 1:
        rest = dict(list(required.items())[1:])
        out.append(functools.partial(cls, **rest, **kw))
    if required:
        # A parent that passes what it knows by keyword overrides those of the factory:
        # every required value held (rel_pos_cls=partial(RelPosBias, window_size=(7, 7), ...)).
        out.append(functools.partial(cls, **required, **kw))
    if len(kw) > 1:
        # Which keywords the factory holds and which the parent passes per call is not known:
        # each keyword alone, then each pair (the most a factory of this kind holds, mostly).
        items = list(kw.items())[:6]
        out += [functools.partial(cls, **dict([kv])) for kv in items]
        if len(items) > 2:
            out += [functools.partial(cls, **dict(p)) for p in itertools.combinations(items, 2)]
    return out


def _ints(value: Any) -> bool:
    return type(value) is int or isinstance(value, tuple) and all(type(x) is int for x in value)


def _unset_spread(f: Field) -> bool:
    return f.origin == "default" and not f.value


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


def _fits(infos: dict[str, KindInfo], f: Field, value: Any) -> bool:
    """Whether the search may try ``value`` for ``f``."""
    # None is tried for any field, required ones too: annotations say `int` where callers
    # pass None (a layer made only when its width is given, ``_forms/rules/unset_width.py``); the build
    # decides. Annotations that lie are tried past: a float where `int` is annotated (a live
    # attribute 1.0 for attn_ratio: int), an int for a `bool` (below).
    if value is None or type(value) is float and f.kind == "int":
        return True
    if f.kind == "int" and isinstance(value, tuple) and all(type(x) is int for x in value):
        return True  # widths per layer where `int` is annotated (out_chs = to_2tuple(...))
    if isinstance(value, str) and f.kind == "int" and not f.annotation:
        return True  # a kind read from an int default only (padding=0 that takes "same")
    if f.kind == "str" and not f.annotation and _ints(value):
        return True  # a kind read from a str default only (padding="SAME" that takes (3, 3))
    if type(value) is int and f.kind == "tensor":
        return True  # a width annotated as a tensor (the candidates offer one by its name)
    if type(value) is int and f.kind == "bool":
        return True  # `layer_idx: bool | None` (transformers' LED) holds a layer's index
    if f.kind == "float" and isinstance(value, list) and all(type(x) is float for x in value):
        return True  # per-block rates where `float` is annotated (drop_path=dpr[i] inside)
    if isinstance(value, tuple) and isinstance(f.default, tuple) and f.kind == "class":
        return True  # one class per layer (act_layer=(nn.ReLU6, None)) read as a class
    if isinstance(value, type) and f.kind == "str" and issubclass(value, nn.Module):
        return True  # a layer's class where its registry name is annotated (act_layer: str)
    if isinstance(value, functools.partial) and f.kind in ("class", "callable", "literal"):
        return True  # a factory for a class field (norm_layer=partial(BatchNorm2d, eps=...))
    return check_type(f, infos[f.name], value) is None


def _write(
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    infos: dict[str, KindInfo],
    found: Inferred,
    rivals: dict[str, Any],
) -> None:
    """The values the search found written into ``fields`` and ``infos`` (in place): inferred
    where the build is exact, a nearer guess where not, the draft flagged where a rival value
    rebuilds as exactly."""
    for i, f in enumerate(fields):
        if f.name in rivals:
            kept_value = found.values[f.name]
            if not same(kept_value, f.value):  # a required one: the value found, as a guess
                f, infos[f.name] = make_field(cls, sig.parameters[f.name], kept_value, "default")
            fields[i] = dataclasses.replace(f, note=note(rivals[f.name], f.kind))
            continue
        # A required value the search proved None is given, not missing (drop_path=None).
        given = found.exact and f.required and f.value is None and f.origin == "default"
        if f.name not in found.values or same(found.values[f.name], f.value) and not given:
            continue
        value = found.values[f.name]
        if found.exact:
            # A default the build agrees with is proven by the gate, but it stays a default; a
            # value the search had to find is "inferred".
            fields[i], infos[f.name] = make_field(cls, sig.parameters[f.name], value, "inferred")
        elif guessed(f) and not f.required:
            # The closest build's value: still a guess, but nearer than the default. A required
            # value stays empty: a guess there would build without complaint.
            fields[i], infos[f.name] = make_field(cls, sig.parameters[f.name], value, "default")


def _hint(cls: type, fields: list[Field], first: list[Field], found: Inferred) -> tuple[str, Check]:
    """Why the form is not exact (the search's closest build), and the gate's answer for it."""
    if found.check.cut:
        return (
            f"{cls.__name__}'s build with the values it keeps did not finish within the form's "
            f"safety ceiling ({CEILING_SECONDS:g} s of CPU), so they are not checked.",
            found.check,
        )
    closest = found.check.reason.removeprefix("inexact: ")
    empty = any(f.required and f.value is None for f in fields)
    # The closest build is the form's own when no required value stayed empty: the gate's answer
    # (with its parts, so that an edit setting the field that differs can apply). Its one line
    # names the part; the hint says how the search ended.
    check = Check(f"inexact: {closest}", found.check.diffs, None if empty else found.check.base)
    unknown = [f.name for f in first]
    what = f"no attribute for {', '.join(unknown)}" if unknown else "attributes that rebuild it"
    return (
        f"{cls.__name__} keeps {what}, and {found.reason}: required ones stay empty, the others "
        "show guesses. Record the model's construction (`%load_ext torchxray` or "
        "`tx.record_everything()` before building it, or `with tx.record_init_args():`) to get "
        "exact forms.",
        check,
    )


def _search(
    module: nn.Module,
    fields: list[Field],
    first: list[Field],
    fits: Callable[[Field, Any], bool],
    make: Callable[[dict[str, Any]], nn.Module],
    budget: Budget,
    live: Parts,
    factory: Callable[[nn.Module], list[Any]],
    stop: float,
) -> Inferred:
    """The search over the guessed fields, then, if it is not exact, a wider one from where it
    ended (``_widen``), within the same budget."""
    wide = _widen(fields)
    alone = len(wide) <= len(first)  # no wider search follows this one
    found = infer(module, fields, first, fits, make, budget, None, live, factory, stop, alone)
    if not found.exact and not alone and not budget.out:
        # Its first build is a search's build like any other: it ends with the search.
        last = min(stop, budget.left + LAST_BUILD_SLACK)
        again = infer(
            module, fields, wide, fits, make, budget, found.values, live, factory, last, True
        )
        if again.exact:
            found = again
    return found


def fill(
    module: nn.Module,
    cls: type,
    sig: inspect.Signature,
    fields: list[Field],
    infos: dict[str, KindInfo],
    started: float,
    form: Callable[[nn.Module], Any],
) -> tuple[str, Check | None]:
    """Replace guessed fields (in place) by values a meta build confirms. Returns the hint ("" when
    the rebuild is exact) and the gate's answer for the final values (None: not known yet)."""
    out_infos = infos
    # A whole model's guessed values start from the function it is named after
    # (``_forms/named_factory.py``); the search and the gate check them like any other.
    outer = BUDGET.get()
    # A child form (``_factory``, a block's description) shares its parent's budget and ceiling.
    ceiling = outer.ceiling if outer is not None else started + CEILING_SECONDS
    start, named = started_from(module, cls, sig, fields, guessed, ceiling)
    # Config arguments are searched field by field (``_forms/nested.py``); each build makes them.
    nested = nest(cls, sig, start, infos, {f.name for f in start if guessed(f)})
    form_fields, fields = fields, nested.fields
    infos = {**infos, **nested.infos}
    base = {f.name: f.value for f in fields}
    if "device" in base:
        base["device"] = torch.device("meta")  # an explicit device would beat the meta context

    def make(changes: dict[str, Any]) -> nn.Module:
        bound = bind(sig, form_fields, nested.assemble({**base, **changes}))
        # Copies: a constructor may set fields of the config it is given (T5Stack's use_cache),
        # and the candidates are the live model's own objects.
        args, kwargs = snapshot(bound.args, bound.kwargs)
        return typing.cast(nn.Module, cls(*args, **kwargs))

    fits = functools.partial(_fits, infos)

    budget = Budget(SEARCH_WORK, ceiling, outer)
    first = [f for f in fields if guessed(f)]
    live = parts(module)
    token = BUDGET.set(budget)
    opened = FORM.set(form)  # the blocks' forms, for a list of block descriptions
    made: dict[int, list[Any]] = {}

    def factory(layer: nn.Module) -> list[Any]:
        if id(layer) not in made:
            made[id(layer)] = [] if budget.out else _factory(layer, form)
        return made[id(layer)]

    # A **kwargs handed on to a layer starts from what that layer holds (``_forms/handed.py``).
    spread = next((f for f in fields if f.kind == "varkw" and _unset_spread(f)), None)
    kept: dict[str, Any] | None = None
    # The first build (the form's own values) is not bounded by the budget (only by the ceiling);
    # a child form's, by what its parent has left.
    stop = outer.left + CHILD_SLACK if outer is not None else float("inf")
    # The cyclic GC waits while the builds run: in a process with a big heap its passes rescan
    # everything, on the form's second, for garbage the builds do not need collected.
    collecting = pause()
    try:
        if spread is not None and (
            kept := named.get(spread.name) or handed(cls, module, spread.name, form)
        ):
            base[spread.name] = kept
        found = _search(module, fields, first, fits, make, budget, live, factory, stop)
        # A field the search moved that its draft value rebuilds as exactly proves nothing: it
        # keeps the draft, flagged (``_forms/ambiguous.py``). One build per field moved: bounded
        # by the fields, not the budget (a form must say the same of them on every call).
        rivals: dict[str, Any] = {}
        if found.exact:
            dtype = floating_dtype(module)
            rivals = settle(form_fields, found.values, make, live, dtype, budget)
    finally:
        BUDGET.reset(token)
        FORM.reset(opened)
        resume(collecting)
    infos, fields = out_infos, form_fields
    if found.exact and spread is not None and kept:
        found.values[spread.name] = kept
    if found.exact and nested.groups:
        made_cfg = nested.assemble({**base, **found.values})
        found.values.update({n: made_cfg[n] for n in nested.names})
    _write(cls, sig, fields, infos, found, rivals)
    hint, check = ("", found.check) if found.exact else _hint(cls, fields, first, found)
    if budget.stopped:
        hint = f"{hint} {CEILING_NOTE}".strip()  # the one form allowed to differ says so
    return hint, check
