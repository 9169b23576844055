"""Constructor values no attribute holds, inferred from the live module and checked by building.

For each parameter a form could only guess (a default nothing confirms, or a required value it
could not find), candidates come from the module itself: same-named attributes of its children
(``layer_idx`` on ``self_attn``), known aliases (``variance_epsilon`` for ``eps``), the widths of
its layers and the shapes of its own parameters (``hidden_size`` of an RMSNorm from
``weight.shape``), the classes of its children (``act_layer``), and for a ``config`` the config of
a child or of the ``transformers`` model around it. A candidate set is accepted only when a build
on the meta device matches the live module exactly (``compare.mismatch``); the search is greedy,
one parameter at a time, scored by how much of the structure matches, and bounded in builds and
time so a form opens fast.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from .candidates import candidates, same_value
from .compare import structure
from .field import Field

__all__ = ["Inferred", "guessed", "infer"]

MAX_BUILDS = 120
MIN_BUILDS = 12
MAX_SECONDS = 30.0  # a safety net only: the build count is what bounds the search
MODULE_BUILDS = 2000  # submodules built, summed over the search
MAX_MODULES = 1000  # bigger modules keep their guesses: one build is already costly
SMALL = 60  # modules this small also get their stored attributes re-checked


class Inferred:
    """Result of a search: values that made the build match (``values``), whether it matched
    (``exact``), and why not (``reason``)."""

    def __init__(self, values: dict[str, Any], exact: bool, reason: str) -> None:
        self.values = values
        self.exact = exact
        self.reason = reason


def guessed(f: Field) -> bool:
    if f.kind in ("varargs", "varkw") or f.name in ("device", "dtype"):
        return False
    return f.origin == "default" or (f.required and f.value is None)


def _units(row: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """A structure row cut into the pieces a score counts: a candidate that fixes one number of
    a layer's extra_repr (its stride, not yet its padding) scores higher than one that does not."""
    _, cls, extra, children, params, buffers = row
    return ((cls,), tuple(extra.split(", ")), children, params, buffers)


def _rank(f: Field, pools: dict[str, list[Any]]) -> tuple[bool, int]:
    """Per-stage tuples (ConvNeXt's dims, depths) shape the most: they go first; then the fields
    with the fewest candidates."""
    d = f.default
    stages = isinstance(d, tuple) and bool(d) and all(type(x) is int for x in d)
    return (not stages, len(pools[f.name]))


def infer(
    module: nn.Module,
    fields: list[Field],
    fits: Callable[[Field, Any], bool],
    make: Callable[[dict[str, Any]], nn.Module],
    also: frozenset[str] = frozenset(),
) -> Inferred:
    """Values for the guessed fields (and those named in ``also``) that rebuild ``module``
    exactly (see the module doc)."""
    searched = [f for f in fields if guessed(f) or f.name in also]
    if not searched:
        return Inferred({}, True, "")
    live = {r[0]: _units(r) for r in structure(module)}
    if also and len(live) > SMALL:
        return Inferred({}, False, "no candidate values rebuild it exactly")
    if len(live) > MAX_MODULES:
        return Inferred({}, False, f"too big to check ({len(live)} submodules)")
    best_total = sum(len(u) for units in live.values() for u in units)
    # Bounded in work, not time (the same form on any machine): fewer builds for bigger modules.
    max_builds = max(MIN_BUILDS, min(MAX_BUILDS, MODULE_BUILDS // len(live)))
    start = time.perf_counter()
    builds = 0
    last_error = ""

    def score(values: dict[str, Any]) -> int:
        nonlocal builds, last_error
        builds += 1
        try:
            with warnings.catch_warnings(), torch.device("meta"):
                warnings.simplefilter("ignore")
                built = make(values)
        except Exception as e:  # noqa: BLE001 - a candidate the class rejects scores lowest
            last_error = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            return -1
        rows = structure(built)
        total = 0
        for r in rows:
            want = live.get(r[0])
            if want is not None:
                got = _units(r)
                total += sum(x == y for a, b in zip(want, got) for x, y in zip(a, b))
                total -= sum(abs(len(a) - len(b)) for a, b in zip(want, got))
        return total - abs(len(rows) - len(live))

    pools = {f.name: candidates(module, f, functools.partial(fits, f)) for f in searched}
    start_values = {f.name: (pools[f.name][0] if pools[f.name] else f.value) for f in searched}
    first_score = score(start_values)
    current, best = start_values, first_score
    out_of_time = False
    # Two orders from the same start: the options first (a ratio only scores once the widths it
    # multiplies hold their likely values), then the required values first.
    for required_last in (True, False):
        if best == best_total or out_of_time:
            break
        trial_best, trial_current = first_score, start_values
        order = sorted(searched, key=lambda f: (f.required == required_last, _rank(f, pools)))
        for _ in range(3):
            improved = False
            for f in order:
                for c in pools[f.name]:
                    if trial_best == best_total:
                        break
                    if same_value(c, trial_current[f.name]):
                        continue
                    if builds >= max_builds or time.perf_counter() - start > MAX_SECONDS:
                        out_of_time = True
                        break
                    trial = {**trial_current, f.name: c}
                    s = score(trial)
                    if s > trial_best:
                        trial_best, trial_current, improved = s, trial, True
            if trial_best == best_total or not improved or out_of_time:
                break
        if trial_best > best:
            best, current = trial_best, trial_current
    if best == best_total:
        return Inferred(current, True, "")
    why = "no candidate values rebuild it exactly"
    if out_of_time:
        why = "no exact match was found within the search's budget"
    if best < 0 and last_error:
        why = f"building it on the meta device failed ({last_error})"
    return Inferred(current, False, why)
