"""Constructor values no attribute holds, inferred from the live module and checked by building.

A search over the fields a form could only guess (and, when that is not enough, those it read
from attributes, which may hold a transformed value): each try builds the class on the meta device
and compares the build with the live module part by part (``_forms/rebuild/compare.py``); the score is how
many parts differ, and 0 is an exact rebuild. Proposals come first from the differences of the
best build so far (the rules of ``rules/``: the live value where the build has the field's value,
or a multiple of it), then from each field's candidates (stage 2's pools,
``_forms/sources/pools.py``: children's attributes, widths, kernel sizes, classes, configs). The
loop and what it keeps are in ``loop.py``. The search is bounded in work (``budget``,
``_forms/budget.py``), not in seconds, and says when it ran out.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..budget import TOO_SLOW, Budget
from ..field import Field
from ..rebuild.compare import Check, sentence
from ..sources import Leads
from .loop import Search
from .unfilled import unfilled

__all__ = ["Inferred", "infer"]


@dataclass
class Inferred:
    """Result of a search: the values of the best build (``values``), its gate answer
    (``check``, reason "" when exact), how many builds it took, and why it stopped."""

    values: dict[str, Any]
    check: Check
    builds: int = 0
    reason: str = ""
    seconds: float = 0.0
    # Plain data, not a property: the stages after the search read it without calling back.
    exact: bool = field(init=False)

    def __post_init__(self) -> None:
        self.exact = self.check.base is not None and not self.check.reason


def infer(
    module: nn.Module,
    fields: list[Field],
    searched: list[Field],
    fits: Callable[[Field, Any], bool],
    make: Callable[[dict[str, Any]], nn.Module],
    budget: Budget,
    leads: Leads,
    sig: inspect.Signature,
    factory: Callable[[nn.Module], list[Any]] | None = None,
    first_stop: float = float("inf"),
    late_looks: bool = False,
    start: dict[str, Any] | None = None,
) -> Inferred:
    """Values for the ``searched`` fields that rebuild ``module`` exactly (see the module doc);
    ``leads`` holds the module's parts and the fields' candidates (stage 2), ``sig`` the
    constructor's signature; ``start`` holds values a previous search found; the first build is
    stopped past ``first_stop`` work (a child form's: its parent's budget left; it is then not
    checked); ``late_looks``: no search follows this one, so a look past may use all of its
    budget."""
    s = Search(
        module, fields, searched, fits, make, budget, leads, sig, factory, first_stop, late_looks
    )
    t0 = time.thread_time()
    best = s.run(start)
    values, builds, live = s.values, s.builds, s.live
    seconds = time.thread_time() - t0
    if best is None and s.cut:
        return Inferred(values, Check(TOO_SLOW, cut=True), builds, TOO_SLOW[9:], seconds)
    if best is None:
        error = s.far_error or s.error
        why = (
            f"building it on the meta device failed ({error})" if error else "it could not be built"
        )
        why += unfilled(error, leads.uses, values) if error else ""
        return Inferred(values, Check(why), builds, why, seconds)
    if best.score == 0:
        return Inferred(values, Check("", [], best.built), builds, "", seconds)
    why = "no candidate values rebuild it exactly"
    if s.out_of_time and budget.stopped:
        why = f"the search was stopped by the form's safety ceiling after {builds} builds"
    elif s.out_of_time:
        why = f"the search ran out of its budget after {builds} builds"
    assert best.built is not None
    text = f"inexact: {sentence(best.diffs, live, best.built)}"
    return Inferred(values, Check(text, best.diffs, best.built), builds, why, seconds)
