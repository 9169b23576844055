"""Constructor values no attribute holds, inferred from the live module and checked by building.

A search over the fields a form could only guess (and, when that is not enough, those it read
from attributes, which may hold a transformed value): each try builds the class on the meta device
and compares the build with the live module part by part (``_forms/exact.py``); the score is how
many parts differ, and 0 is an exact rebuild. Proposals come first from the differences of the
best build so far (``_forms/guide.py`` runs the rules of ``_forms/rules/``: the live value where the build has the field's value, or
a multiple of it), then from each field's candidates (``_forms/candidates.py``: children's
attributes, widths, kernel sizes, classes, configs). The search is bounded in time (``deadline``)
and says when it ran out.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from .candidates import candidates, same_value
from .exact import (
    TOO_SLOW,
    Check,
    Difference,
    cast_like,
    differences,
    floating_dtype,
    sentence,
    weight,
)
from .failed import learn, teaches
from .field import Field
from .guide import proposals
from .metabuild import PastDeadline, TooBig, meta_build
from .parts import Parts, parts
from .tuning import (
    BETTER_LOOKS,
    FLAT_LOOKS,
    FLAT_MARGIN,
    FLAT_TRIES,
    GUIDED_TRIES,
    LAST_BUILD_SLACK,
    SIZE_FACTOR,
    SIZE_FLOOR,
    SLOW_FACTOR,
    SLOW_FLOOR,
)

__all__ = ["Inferred", "guessed", "infer"]


@dataclass
class Inferred:
    """Result of a search: the values of the best build (``values``), its gate answer
    (``check``, reason "" when exact), how many builds it took, and why it stopped."""

    values: dict[str, Any]
    check: Check
    builds: int = 0
    reason: str = ""
    seconds: float = 0.0

    @property
    def exact(self) -> bool:
        return self.check.base is not None and not self.check.reason


@dataclass
class _Try:
    score: int
    diffs: list[Difference] = field(default_factory=list)
    built: Parts | None = None


def guessed(f: Field) -> bool:
    if f.kind in ("varargs", "varkw") or f.name in ("device", "dtype"):
        return False
    return f.origin == "default" or (f.required and f.value is None)


def _rank(f: Field, pools: dict[str, list[Any]]) -> tuple[bool, int]:
    """Per-stage tuples (ConvNeXt's dims, depths) shape the most: they go first; then the fields
    with the fewest candidates."""
    d = f.default
    stages = isinstance(d, tuple) and bool(d) and all(type(x) is int for x in d)
    return (not stages, len(pools[f.name]))


def _key(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str, type(None))):
        return (type(v), v)
    if isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str)) for x in v):
        return (tuple, v)
    return (type(v), id(v))


def _plain(change: dict[str, Any]) -> bool:
    """Numbers, strings, tuples, flags: a factory or a layer made on the way is not worth a
    second look (they are many and rarely half right)."""
    return all(
        isinstance(v, (bool, int, float, str, tuple, dict, type(None))) for v in change.values()
    )


def infer(
    module: nn.Module,
    fields: list[Field],
    searched: list[Field],
    fits: Callable[[Field, Any], bool],
    make: Callable[[dict[str, Any]], nn.Module],
    deadline: float,
    start: dict[str, Any] | None = None,
    live: Parts | None = None,
    factory: Callable[[nn.Module], list[Any]] | None = None,
    first_stop: float = float("inf"),
    late_looks: bool = False,
) -> Inferred:
    """Values for the ``searched`` fields that rebuild ``module`` exactly (see the module doc);
    ``start`` holds values a previous search found, ``live`` the module's parts if known; the
    first build is stopped past ``first_stop`` (the form's time limit: it is then not checked);
    ``late_looks``: no search follows this one, so a look past may use all of its budget."""
    t0 = time.thread_time()
    live = live if live is not None else parts(module)
    dtype = floating_dtype(module)
    # A candidate that builds a module many times the live one's size is wrong anyway.
    cap = SIZE_FACTOR * len(live.summary) + SIZE_FLOOR
    builds, error, reached, cut, slowest = 0, "", 0, False, 0.0

    def run(values: dict[str, Any]) -> _Try | None:
        nonlocal builds, error, reached, cut, slowest
        builds += 1
        begun = time.thread_time()
        # The first build is the form's own values, and may pay torch's one-time warm-up (the
        # first meta kernels of a process): it may run to the form's limit, past the search's.
        # A later one that takes many times the slowest build so far is wrong anyway (a side
        # tried as a multiple loops over the grid's pairs of points): it is stopped.
        stop = first_stop if builds == 1 else deadline + LAST_BUILD_SLACK
        if builds > 1 and slowest:
            stop = min(stop, begun + max(SLOW_FLOOR, SLOW_FACTOR * slowest))
        state: list[Any] = [0]
        try:
            with meta_build(cap, stop) as state:
                built = make(values)
            cast_like(built, dtype)
        except Exception as e:  # noqa: BLE001 - a candidate the class rejects is no build
            error = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            # How far the constructor got (submodules it made) before it raised; a build cut
            # for its size got nowhere that counts.
            reached = -1 if isinstance(e, TooBig) else state[0]
            cut = cut or builds == 1 and isinstance(e, PastDeadline)
            return None
        slowest = max(slowest, time.thread_time() - begun)
        got = parts(built)
        diffs = differences(live, got)
        return _Try(weight(diffs, live, got), diffs, got)

    by_name = {f.name: f for f in searched}
    known = {f.name: f.value for f in fields if f.name not in by_name}
    pools = {f.name: candidates(module, f, functools.partial(fits, f)) for f in searched}
    values = {f.name: f.value for f in searched}
    values.update(start or {})
    for f in searched:
        if values[f.name] is None and f.required and pools[f.name]:
            values[f.name] = pools[f.name][0]
    seen = {tuple(_key(values[n]) for n in by_name)}
    best = run(values)
    if best is None:
        learn(error, searched, pools, fits, module, values)
    # While no value set builds, a change that lets the constructor get further (more submodules
    # made before it raises) is a step: two wrong values are then fixed one after the other.
    far, far_error = reached, error
    out_of_time = False

    done: dict[tuple[Any, ...], _Try | None] = {}  # a state's build, for a second look

    def tried(change: dict[str, Any]) -> bool:
        state = tuple(_key(change[n] if n in change else values[n]) for n in by_name)
        if state in seen:
            return True
        seen.add(state)
        return False

    def build(change: dict[str, Any]) -> _Try | None:
        got = run({**values, **change})
        done[tuple(_key(change[n] if n in change else values[n]) for n in by_name)] = got
        return got

    order = sorted(searched, key=lambda f: (not f.required, _rank(f, pools)))
    while best is None or best.score > 0:
        if time.thread_time() > deadline:
            out_of_time = True
            break
        step: tuple[dict[str, Any], _Try | None] | None = None
        flat: list[tuple[dict[str, Any], _Try]] = []
        if best is not None:
            n = 0
            for change in proposals(best.diffs, searched, values, module, factory, known):
                if any(
                    k not in by_name or same_value(v, values[k]) or not fits(by_name[k], v)
                    for k, v in change.items()
                ):
                    continue
                if tried(change):
                    # Built before, from another state: still a place to look from.
                    old = done.get(tuple(_key(change.get(n, values[n])) for n in by_name))
                    if old is not None and old.score <= best.score + FLAT_MARGIN and _plain(change):
                        flat = sorted([*flat, (change, old)], key=lambda x: x[1].score)
                        flat = flat[:FLAT_LOOKS]
                    continue
                got = build(change)
                n += 1
                bar = step[1] if step is not None and step[1] is not None else best
                if got is not None and got.score < bar.score:
                    step = (change, got)
                    if got.score == 0:
                        break
                    # A few more proposals, and the best of them: the first that scores better
                    # may move a width that another field derives (in_chs where transformer_dim
                    # was meant), a step away from the exact values.
                    n = max(n, GUIDED_TRIES - BETTER_LOOKS)
                elif got is not None and got.score <= best.score + FLAT_MARGIN and _plain(change):
                    flat = sorted([*flat, (change, got)], key=lambda x: x[1].score)[:FLAT_LOOKS]
                if n >= GUIDED_TRIES or time.thread_time() > deadline:
                    break
        if step is None:
            for f in order:
                for c in pools[f.name]:
                    if same_value(c, values[f.name]) or tried({f.name: c}):
                        continue
                    if time.thread_time() > deadline:
                        break
                    got = run({**values, f.name: c})
                    if got is not None and (best is None or got.score < best.score):
                        step = ({f.name: c}, got)
                        break
                    # So is one that fails as far, for another reason the message explains
                    # (a per-block rate now a list: the stride next to it is the int indexed).
                    moved = reached == far and error != far_error and teaches(error, c)
                    if got is None and best is None and (reached > far or moved):
                        step, far, far_error = ({f.name: c}, None), reached, error
                        learn(error, searched, pools, fits, module, {**values, f.name: c})
                        break
                if step is not None:
                    break
        # Only in the first half of the budget: a look past costs builds the plain search may need
        # (a wider one that follows). With no search to follow (``late_looks``), it costs nothing,
        # and a form does not change with the load that made its builds slower.
        early = late_looks or time.thread_time() < t0 + (deadline - t0) / 2
        for first, got in flat if step is None and best is not None and early else []:
            m = 0
            on = {**values, **first}
            for change in proposals(got.diffs, searched, on, module, factory, known):
                if any(
                    k not in by_name or same_value(v, on[k]) or not fits(by_name[k], v)
                    for k, v in change.items()
                ) or tried({**first, **change}):
                    continue
                two = run({**on, **change})
                if two is not None and best is not None and two.score < best.score:
                    step = ({**first, **change}, two)
                    break
                m += 1
                if m >= FLAT_TRIES or time.thread_time() > deadline:
                    break
            if step is not None:
                break
        if step is None:
            out_of_time = time.thread_time() > deadline
            break
        values.update(step[0])
        best = step[1]
    seconds = time.thread_time() - t0
    if best is None and cut:
        return Inferred(values, Check(TOO_SLOW, cut=True), builds, TOO_SLOW[9:], seconds)
    if best is None:
        error = far_error or error
        why = (
            f"building it on the meta device failed ({error})" if error else "it could not be built"
        )
        return Inferred(values, Check(why), builds, why, seconds)
    if best.score == 0:
        return Inferred(values, Check("", [], best.built), builds, "", seconds)
    why = "no candidate values rebuild it exactly"
    if out_of_time:
        why = f"the search ran out of its time budget after {builds} builds"
    assert best.built is not None
    text = f"inexact: {sentence(best.diffs, live, best.built)}"
    return Inferred(values, Check(text, best.diffs, best.built), builds, why, seconds)
