"""The form's budget, counted in work done, not in seconds (``Budget``), and its one bound on
the clock, the safety ceiling (``CEILING_SECONDS``).

Not a stage: every stage that builds spends it. The pipeline (``forms.py``) opens one per
searched form before the readings (``_forms/sources/``: a block's own form read for a
description, a layer's for a ``**kwargs`` handed on) and the search (``_forms/candidates/``),
which both open child forms that spend it; the gate (``_forms/exact/``) stops its build at the
ceiling.

A form is a pure function of its module: the same on every call, on an idle machine or a loaded
one. A budget in CPU seconds broke that: a loaded machine (or a cold cache) makes every build
slower, the search stopped after fewer builds, and a second form showed other guesses, or was
exact where the first was not. So the search counts what its builds make instead: each build
costs ``BUILD_WORK`` plus the parts it constructs (submodules, parameters and buffers registered)
and the torch calls its constructor makes (``_forms/rebuild/meta.py`` counts them), or the parts its
score reads where those are more (layers handed to the constructor), a cost that does not depend
on the machine: a whole model's build counts for more than a leaf's. What it does not see is a
constructor's plain Python (timm TinyVit's attention offsets, a loop over every pair of points):
such a search spends more CPU per unit of work, never another number of builds.

Lifetime: one ``Budget`` per searched form, made by the pipeline (``forms.py``) and set in
``BUDGET`` for the form's call; a child form opened inside it (a factory for a field, a block's description) makes
its own, bounded by what its parent has left, and everything it spends is charged to its parent
too. Nothing outlives the form.

The one thing left on the clock is the safety ceiling (``CEILING_SECONDS`` of the thread's CPU,
for the form and the child forms it opens): a last resort for a constructor that computes for
seconds in plain Python, where there is nothing to count. A form the ceiling stopped says so in
its hint; it is the only form that may differ from one call to the next.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import dataclass

__all__ = ["BUDGET", "CEILING_NOTE", "CEILING_SECONDS", "SEARCH_WORK", "TOO_SLOW", "Budget"]

# The search's budget, in work (``_forms/candidates/tuning.py`` says what a unit of work is): at
# ~0.32 ms of CPU per build plus ~19 us per part or torch call counted (fit on the forms sweep's
# first 25 timm models, 1501 builds, 2026-12-04, 2 shared CPUs at load ~6), ~0.9 s of CPU at load
# ~6, and less on an idle machine, where a form opens within ~1 s of CPU (the form's own build and
# the gate take the rest). A loaded machine does the same builds, only slower. On the sweep (timm,
# torchvision, the zoo; docs, "Two forms in a row") it keeps every class exact that a 0.8 s budget
# made exact, and 5 more; the slowest opens (1.3-1.5 s at load ~5) are constructors that compute
# in plain Python.
SEARCH_WORK = 50_000
# The safety ceiling, the one bound on the clock: the thread's CPU seconds a form (with the child
# forms it opens) may take before a build is stopped, for a constructor that computes for seconds
# in plain Python (nothing to count). Far above the ~1 s the budget takes on an idle machine, so
# that a loaded machine (CPU time per build grows up to ~2x with the load) never reaches it for a
# form the budget bounds; a form it stops says so, and is the only one that may differ from call
# to call.
CEILING_SECONDS = 4.0

CEILING_NOTE = (
    f"The search was stopped by the form's safety ceiling ({CEILING_SECONDS:g} s of CPU), so "
    "this form may differ from one call to the next."
)
# The gate's answer when its build did not finish within the ceiling (``_forms/exact/gate.py``),
# and the search's when its first build did not (``_forms/candidates/infer.py``).
TOO_SLOW = (
    "inexact: not checked: building it did not finish within the form's safety ceiling "
    f"({CEILING_SECONDS:g} s of CPU); an edit checks it in full"
)


@dataclass
class Budget:
    """``limit`` work units to spend (``spent`` so far), under ``parent``'s; builds stop at
    ``ceiling`` (the thread's CPU time), and ``stopped`` says one did."""

    limit: int
    ceiling: float
    parent: Budget | None = None
    spent: int = 0
    stopped: bool = False

    def chain(self) -> list[Budget]:
        out: list[Budget] = []
        b: Budget | None = self
        while b is not None:
            out.append(b)
            b = b.parent
        return out

    @property
    def left(self) -> int:
        """Work left to this budget and every budget above it."""
        return min(b.limit - b.spent for b in self.chain())

    @property
    def out(self) -> bool:
        """Spent, or stopped by the ceiling: the search tries nothing more."""
        if not self.stopped and self.past_ceiling():
            self.stop()
        return self.left <= 0 or self.stopped

    def past_ceiling(self) -> bool:
        return time.thread_time() > self.ceiling

    def charge(self, work: int) -> None:
        for b in self.chain():
            b.spent += work

    def stop(self) -> None:
        """A build ran into the ceiling: this form and the forms above it say so."""
        for b in self.chain():
            b.stopped = True


BUDGET: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "torchxray_budget", default=None
)
