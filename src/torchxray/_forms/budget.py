"""The rebuild search's budget, counted in work done, not in seconds (``Budget``).

A form is a pure function of its module: the same on every call, on an idle machine or a loaded
one. A budget in CPU seconds broke that: a loaded machine (or a cold cache) makes every build
slower, the search stopped after fewer builds, and a second form showed other guesses, or was
exact where the first was not. So the search counts what its builds make instead: each build
costs ``BUILD_WORK`` plus the parts it constructs (submodules, parameters and buffers registered)
and the torch calls its constructor makes (``_forms/metabuild.py`` counts them), or the parts its
score reads where those are more (layers handed to the constructor), a cost that does not depend
on the machine: a whole model's build counts for more than a leaf's. What it does not see is a
constructor's plain Python (timm TinyVit's attention offsets, a loop over every pair of points):
such a search spends more CPU per unit of work, never another number of builds.

Lifetime: one ``Budget`` per form's search, made by ``fill()`` and set in ``BUDGET`` for the
form's call; a child form opened inside it (a factory for a field, a block's description) makes
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

from .tuning import CEILING_SECONDS

__all__ = ["BUDGET", "CEILING_NOTE", "Budget"]

CEILING_NOTE = (
    f"The search was stopped by the form's safety ceiling ({CEILING_SECONDS:g} s of CPU), so "
    "this form may differ from one call to the next."
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
