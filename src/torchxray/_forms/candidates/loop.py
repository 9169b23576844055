"""One rebuild search (``infer.py``): a ``Search`` holds everything a search learns while
it runs, and nothing outlives it.

Lifetime: one ``Search`` per search, made and dropped by ``infer()`` inside one form open
(``candidates/__init__.py`` runs at most two per form: the guessed fields, then wider). It owns
the search's caches: the value sets tried (``seen``), the build of each (``done``, for a second
look from a build that scored no better), each field's candidates (``pools``: its own copy of
stage 2's, which what a failed build teaches adds to), the slowest build so far
(a later one many times slower is stopped), how far a failing constructor got, and the
fields the constructor checks are equal (``ties``: every build moves them together). A form is a
pure function of the module: a second form opens a new ``Search`` and finds the same.

The loop (``run``): from the best build so far, try the rules' proposals for its differences
(``guided``); if none scores better, each field's candidates (``candidate``); if none, a second
look from the builds that scored nearly as well (``second_look``); if none, the last rules' moves
of two fields together (``paired``), where the search would otherwise stop. Stop at an exact
build, with no step left, or when the budget is spent. The bounds are named in ``tuning.py``.

Every bound is counted in work (``_forms/budget.py``: each build's parts and torch calls, plus
``BUILD_WORK``), never in seconds, so the same module gets the same builds on any machine, under
any load: a form is the same on every call. Only the safety ceiling is on the clock.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from ..budget import Budget
from ..field import Field
from ..rebuild.compare import Difference, cast_like, differences, weight
from ..rebuild.meta import OverBudget, PastDeadline, TooBig
from ..rebuild.parts import Parts
from ..rebuild.parts import parts as parts_of
from ..rebuild.real import Rebuild, small
from ..sources import Leads
from ..values import same_value
from .divisible import with_partner
from .failed import blames, learn, teaches
from .guide import proposals
from .held import held_starts
from .rules.problem import Opening
from .tuning import (
    BETTER_LOOKS,
    BUILD_WORK,
    FLAT_LOOKS,
    FLAT_MARGIN,
    FLAT_TRIES,
    GUIDED_TRIES,
    LAST_BUILD_SLACK,
    PAIR_TRIES,
    SIZE_FACTOR,
    SIZE_FLOOR,
    SLOW_FACTOR,
    SLOW_FLOOR,
)

__all__ = ["Search", "Try"]


@dataclass
class Try:
    """A build's score (parts that differ; 0 is exact), its differences and its parts."""

    score: int
    diffs: list[Difference] = field(default_factory=list)
    built: Parts | None = None


Change = dict[str, Any]
Step = tuple[Change, "Try | None"]


def _key(v: Any) -> Any:
    if isinstance(v, (bool, int, float, str, type(None))):
        return (type(v), v)
    if isinstance(v, tuple) and all(isinstance(x, (bool, int, float, str)) for x in v):
        return (tuple, v)
    return (type(v), id(v))


def _plain(change: Change) -> bool:
    """Numbers, strings, tuples, flags: a factory or a layer made on the way is not worth a
    second look (they are many and rarely half right)."""
    return all(
        isinstance(v, (bool, int, float, str, tuple, dict, type(None))) for v in change.values()
    )


def _rank(f: Field, pools: dict[str, list[Any]]) -> tuple[bool, int]:
    """Per-stage tuples (ConvNeXt's dims, depths) shape the most: they go first; then the fields
    with the fewest candidates."""
    d = f.default
    stages = isinstance(d, tuple) and bool(d) and all(type(x) is int for x in d)
    return (not stages, len(pools[f.name]))


class Search:
    """A search for the ``searched`` fields of ``module`` (``infer()`` gives the arguments)."""

    def __init__(
        self,
        module: nn.Module,
        fields: list[Field],
        searched: list[Field],
        fits: Callable[[Field, Any], bool],
        make: Callable[[dict[str, Any]], nn.Module],
        budget: Budget,
        leads: Leads,
        sig: inspect.Signature,
        factory: Callable[[nn.Module], list[Any]] | None,
        first_stop: float,
        late_looks: bool,
    ) -> None:
        self.module, self.searched, self.fits, self.make = module, searched, fits, make
        self.budget, self.factory, self.first_stop = budget, factory, first_stop
        self.late_looks, self.leads, self.sig = late_looks, leads, sig
        self.began = (budget.spent, budget.left)  # where this search began (``_early``)
        self.live = leads.live
        self.dtype = leads.dtype
        self.cap = SIZE_FACTOR * len(self.live.summary) + SIZE_FLOOR
        # A build's expected work is about the live module's parts (what a right one makes).
        self.scale = len(self.live.items)
        self.small = small(module)
        self.builds, self.error, self.reached, self.cut, self.largest = 0, "", 0, False, 0
        self.too_big = False  # the last failed build was cut for its size
        self.by_name = {f.name: f for f in searched}
        self.known = {f.name: f.value for f in fields if f.name not in self.by_name}
        # Its own copy of each field's candidates: what a failed build teaches is added to it.
        self.pools = {f.name: list(leads.pools[f.name]) for f in searched}
        self.values: dict[str, Any] = {f.name: f.value for f in searched}
        self.seen: set[tuple[Any, ...]] = set()
        self.done: dict[tuple[Any, ...], Try | None] = {}
        self.far, self.far_error = 0, ""
        self.out_of_time = False
        self.opened: set[tuple[Any, ...]] = set()  # openings looked past (``paired``)
        # Two fields the constructor checks are equal (``sources/asserted.py``): moved together.
        self.ties = [(a, b) for a, b in leads.ties if a in self.by_name and b in self.by_name]

    # -- builds -------------------------------------------------------------------------------

    def _tie(self, values: dict[str, Any], moved: Any) -> dict[str, Any]:
        """``values`` with each field the constructor checks equal to a ``moved`` one given its
        value (``assert listener_dim == hidden_dim``: moving one alone never passes the check)."""
        for a, b in self.ties:
            if (a in moved) != (b in moved):
                src, dst = (a, b) if a in moved else (b, a)
                values = {**values, dst: values[src]}
        return values

    def build(self, values: dict[str, Any]) -> Try | None:
        """Build the class with ``values`` on meta and score it against the live module; None
        where the constructor raised (``error`` says why, ``reached`` how far it got)."""
        if self.ties:
            moved = {k for k, v in values.items() if k in self.values and v is not self.values[k]}
            values = self._tie(values, moved)
        self.builds += 1
        # The first build is the form's own values: it runs whatever the budget (``first_stop``:
        # no bound for a form, its parent's budget left for a child form's). A later one may
        # finish past the budget by LAST_BUILD_SLACK; one many times the largest build before
        # it, or the live module's parts, is stopped (a candidate that loops over a grid's pairs
        # of points is wrong anyway).
        limit = self.first_stop
        if self.builds > 1:
            limit = self.budget.left + LAST_BUILD_SLACK
            biggest = max(self.largest, self.scale)
            limit = min(limit, max(SLOW_FLOOR, SLOW_FACTOR * biggest))
        # A constructor that reads tensor values is built for real where the live module is
        # small (``_forms/rebuild/real.py``), as the gate builds it.
        build = Rebuild(self.cap, self.budget.ceiling, limit, self.small)
        try:
            built = build.run(lambda: self.make(values))
            cast_like(built, self.dtype)
        except Exception as e:  # noqa: BLE001 - a candidate the class rejects is no build
            count = build.count
            self.budget.charge(BUILD_WORK + build.work)
            self.error = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
            # How far the constructor got (submodules it made) before it raised. A build cut for
            # its size made more than the live module has: another value's failure after fewer
            # is no step (a ViT's defaults of depth 24 cut, ``patch_size=0`` then dividing by
            # zero at its first layer). One cut for time or work got nowhere that counts.
            cut = isinstance(e, TooBig) and type(e) is not TooBig
            self.reached = -1 if cut else count.modules
            self.too_big = isinstance(e, TooBig)  # cut for its size (``candidate``)
            if isinstance(e, PastDeadline) or self.budget.past_ceiling():
                self.budget.stop()  # the safety ceiling: the form says so
            first_cut = self.builds == 1 and isinstance(e, (PastDeadline, OverBudget))
            self.cut = self.cut or first_cut
            return None
        self.largest = max(self.largest, build.work)
        got = parts_of(built)
        # Scoring reads every part of the build, those handed to the constructor too (a detection
        # model given its backbone registers one module and holds thousands of parts): what it
        # reads past what the build made is work as well.
        self.budget.charge(BUILD_WORK + max(build.work, len(got.items)))
        diffs = differences(self.live, got)
        return Try(weight(diffs, self.live, got), diffs, got)

    def _state(self, change: Change) -> tuple[Any, ...]:
        return tuple(_key(change[n] if n in change else self.values[n]) for n in self.by_name)

    def tried(self, change: Change) -> bool:
        """Whether the values with ``change`` were tried before; marks them tried."""
        state = self._state(change)
        if state in self.seen:
            return True
        self.seen.add(state)
        return False

    def _fresh(self, change: Change, on: dict[str, Any]) -> bool:
        """A change of searched fields only, each to another value its field accepts."""
        return not any(
            k not in self.by_name or same_value(v, on[k]) or not self.fits(self.by_name[k], v)
            for k, v in change.items()
        )

    def _late(self) -> bool:
        return self.budget.out

    # -- the loop -----------------------------------------------------------------------------

    def run(self, start: dict[str, Any] | None) -> Try | None:
        """The best build found (None if none built); ``values`` holds its values."""
        # A default the constructor kept under another name starts at what it holds, one it
        # handed to a layer it keeps at what that layer's form found (``held.py``).
        self.values.update(start or held_starts(self.module, self.searched, self.leads, self.fits))
        for f in self.searched:
            if self.values[f.name] is None and f.required and self.pools[f.name]:
                self.values[f.name] = self.pools[f.name][0]
        self.seen.add(self._state({}))
        best = self.build(self.values)
        if best is None:
            self._learn(self.values)
        # While no value set builds, a change that lets the constructor get further (more
        # submodules made before it raises) is a step: two wrong values are then fixed in turn.
        self.far, self.far_error = self.reached, self.error
        while best is None or best.score > 0:
            if self._late():
                self.out_of_time = True
                break
            step, flat = self.guided(best) if best is not None else (None, [])
            step = step or self.candidate(best)
            if step is None and best is not None and self._early():
                step = self.second_look(flat, best)
            if step is None and best is not None:
                step = self.paired(best)
            if step is None:
                self.out_of_time = self._late()
                break
            self.values.update(self._tie({**self.values, **step[0]}, step[0].keys()))
            best = step[1]
        return best

    def _learn(self, values: dict[str, Any]) -> None:
        """What the last failed build's message teaches, added to the pools (``failed.py``)."""
        learn(
            self.error, self.searched, self.pools, self.fits, self.module, values, self.leads.layout
        )

    def _early(self) -> bool:
        """Only in the first half of the budget this search began with: a look past costs builds
        the plain search may need (a wider one that follows). With no search to follow
        (``late_looks``), it costs nothing."""
        spent, left = self.began
        return self.late_looks or self.budget.spent - spent < left / 2

    def _proposals(self, got: Try, on: dict[str, Any], last: bool = False) -> Any:
        return proposals(
            got.diffs,
            self.searched,
            on,
            self.module,
            self.sig,
            self.leads.modes,
            self.factory,
            self.known,
            self.leads.uses,
            last,
        )

    def guided(self, best: Try) -> tuple[Step | None, list[tuple[Change, Try]]]:
        """The best of the rules' proposals for ``best``'s differences that scores better (the
        first such and ``BETTER_LOOKS`` after it; those of other fields together where their
        gains add up, ``_together``), and the few that scored nearly as well."""
        step: Step | None = None
        flat: list[tuple[Change, Try]] = []
        better: list[tuple[Change, Try]] = []
        n = 0
        for change in self._proposals(best, self.values):
            if not self._fresh(change, self.values):
                continue
            if self.tried(change):
                # Built before, from another state: still a place to look from.
                old = self.done.get(self._state(change))
                if old is not None and old.score <= best.score + FLAT_MARGIN and _plain(change):
                    flat = sorted([*flat, (change, old)], key=lambda x: x[1].score)[:FLAT_LOOKS]
                continue
            got = self.build({**self.values, **change})
            self.done[self._state(change)] = got
            n += 1
            bar = step[1] if step is not None and step[1] is not None else best
            if got is not None and got.score < best.score:
                better.append((change, got))
            if got is not None and got.score < bar.score:
                step = (change, got)
                if got.score == 0:
                    break
                # A few more proposals, and the best of them: the first that scores better may
                # move a width that another field derives, a step away from the exact values.
                n = max(n, GUIDED_TRIES - BETTER_LOOKS)
            elif got is not None and got.score <= best.score + FLAT_MARGIN and _plain(change):
                flat = sorted([*flat, (change, got)], key=lambda x: x[1].score)[:FLAT_LOOKS]
            if n >= GUIDED_TRIES or self._late():
                break
        return self._together(best, step, better), flat

    def _together(
        self, best: Try, step: Step | None, better: list[tuple[Change, Try]]
    ) -> Step | None:
        """``step``, or where several changes of other fields each scored better than ``best``,
        all of them together where their gains add up: one build. Each then explains
        differences of its own (a parameter's frames and the blocks' depth); taken one a round,
        the cheaper part of a large build's score is left for a later round the budget may not
        reach. Gains that do not add up (two fields of one product: heads and their width)
        move one thing two ways: the step alone is taken, unless together they are exact."""
        if step is None or step[1] is None or step[1].score == 0 or len(better) < 2:
            return step
        union: Change = {}
        gain = 0
        for change, one in sorted(better, key=lambda x: x[1].score):
            if not union.keys() & change.keys():
                union.update(change)
                gain += best.score - one.score
        if union == step[0] or self.tried(union) or self._late():
            return step
        both = self.build({**self.values, **union})
        self.done[self._state(union)] = both
        if both is not None and (both.score == 0 or both.score == best.score - gain):
            return union, both
        # Not taken now: a later round that proposes it builds it again (as a step of its own).
        self.seen.discard(self._state(union))
        return step

    def paired(self, best: Try) -> Step | None:
        """Where nothing else scores better (the search would stop here): the first move of two
        fields together (the registry's ``last`` rules: ``rules/kept_width.py``,
        ``rules/kept_multiple.py``) that does, ``PAIR_TRIES`` builds at most."""
        n = 0
        for change in self._proposals(best, self.values, last=True):
            if n >= PAIR_TRIES or self._late():
                break
            opening = isinstance(change, Opening) and self._early()
            if not self._fresh(change, self.values):
                continue
            state = self._state(change)
            if self.tried(change):
                # An opening built before as one field's candidate (no better then) is still
                # looked past; any other move tried before is not tried again.
                if not opening or state in self.opened:
                    continue
                got = self.done[state] if state in self.done else self.build(self.values | change)
            else:
                got = self.build({**self.values, **change})
            self.done[state] = got
            n += 1
            if got is not None and got.score < best.score:
                return (change, got)
            if opening and got is not None:
                # A branch opened scores better only once the count beside it moves too.
                self.opened.add(state)
                past = self.second_look([(change, got)], best)
                if past is not None:
                    return past
        return None

    def candidate(self, best: Try | None) -> Step | None:
        """The first of each field's candidates (fields in ``_rank`` order) that scores better;
        while nothing builds, one that lets the constructor get further."""
        # While every build is cut for its size, the loops' counts go first (a ViT's defaults,
        # depth 24 of width 1024: each try of another field is cut too, and costs the most).
        cut = best is None and self.error.startswith("TooBig:")
        counts = {n for n, u in self.leads.uses.items() if u.counts} if cut else set()
        order = sorted(
            self.searched,
            key=lambda f: (f.name not in counts, not f.required, _rank(f, self.pools)),
        )
        for f in order:
            # The smallest whole number of a loop's count (``range(num_layers)``: ``Usage.counts``)
            # whose build was cut for its size: a count makes more parts as it grows, so a larger
            # one is cut too (a stack's depth offered the widths 192 and 432 after 24 was cut:
            # each cut build costs as much as the parts it made before it).
            use = self.leads.uses.get(f.name)
            counted = use is not None and bool(use.counts)
            smallest: int | None = None
            for c in self.pools[f.name]:
                if type(c) is int and smallest is not None and c > smallest:
                    continue
                if same_value(c, self.values[f.name]) or self.tried({f.name: c}):
                    continue
                if self._late():
                    break
                got = self.build({**self.values, f.name: c})
                if got is None and counted and self.too_big and type(c) is int:
                    smallest = c if smallest is None else min(smallest, c)
                if got is not None and (best is None or got.score < best.score):
                    return ({f.name: c}, got)
                # So is one that fails as far, for another reason the message explains (a
                # per-block rate now a list: the stride next to it is the int indexed).
                moved = (
                    self.reached == self.far
                    and self.error != self.far_error
                    and teaches(self.error, c)
                )
                if (
                    got is None
                    and best is None
                    and (self.reached > self.far or moved)
                    and not blames(self.error, c)
                ):
                    self.far, self.far_error = self.reached, self.error
                    self._learn({**self.values, f.name: c})
                    return ({f.name: c}, None)
                if got is None:
                    pair = with_partner(self, f.name, c, best)
                    if pair is not None:
                        return pair
        return None

    def second_look(self, flat: list[tuple[Change, Try]], best: Try) -> Step | None:
        """A proposal that fixed one part and broke others (kernel_size 3 then needs padding 0):
        the proposals of its own build, on top of it, ``FLAT_TRIES`` each."""
        for first, got in flat:
            m = 0
            on = {**self.values, **first}
            for change in self._proposals(got, on):
                if not self._fresh(change, on) or self.tried({**first, **change}):
                    continue
                two = self.build({**on, **change})
                if two is not None and two.score < best.score:
                    return ({**first, **change}, two)
                m += 1
                if m >= FLAT_TRIES or self._late():
                    break
        return None
