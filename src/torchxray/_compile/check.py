"""The graph-break half of a check: the model traced, breaks owned and deduplicated.

`find_breaks(model, capture)` first traces the whole model at once with every block that is
interchangeable with an earlier one (`_compile.plan`) stood in for by its recorded output
(`_compile.stubs`): a model with no break costs one trace, however many blocks it repeats. At a
break, the innermost module whose forward holds it (`_compile.owner`) owns it, for every block of
its group; the owner's children are checked on their own, deepest first (the trace stopped inside
the owner, so those after the break were not traced), the group is stood in for, and the model is
traced again, until it traces to the end. Where that cannot go on (a break in the root's own
forward, an owner that cannot be stood in for or is not known for sure, a trace that fails
otherwise) every module not yet checked is traced on its own, deepest first, with the children
already checked stood in for. It returns the breaks, the notes on what could not be checked, and
the number of traces.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from torch import nn

from .._text import short
from .._unwrap import original_class
from .capture import Capture, Captured
from .owner import defined_at, describe, owner_of
from .plan import Group, plan
from .records import GraphBreak
from .stubs import STUB_FILE, Stubs
from .trace import OWN_FILE, Outcome, trace, trace_each

_MAX_ROUNDS = 64  # traces of the whole model before it is checked module by module

__all__ = ["Breaks", "find_breaks"]


@dataclass
class Breaks:
    breaks: list[tuple[int, GraphBreak]] = field(default_factory=list)  # (forward order, break)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    traced: int = 0
    root_error: str | None = None


def _relative(root: nn.Module, target: nn.Module) -> str:
    if target is root:
        return ""
    for name, m in root.named_modules():
        if m is target:
            return name
    return ""


def _join(base: str, rel: str) -> str:
    return rel if not base else (base if not rel else f"{base}.{rel}")


def _in_stub(exc: BaseException | None) -> bool:
    frames = getattr(exc, "real_stack", None) or []
    return any(getattr(f, "filename", "") == STUB_FILE for f in frames)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return short(f"{type(exc).__name__}: {lines[0] if lines else ''}", 300)


def find_breaks(model: nn.Module, cap: Capture) -> Breaks:
    """See the module docstring; call inside `guard.Quiet`."""
    search = _Search(model, cap)
    search.top_down()
    out = search.out
    out.breaks.sort(key=lambda pair: (pair[0], pair[1].line))
    return out


class _Search:
    """One check's traces, what they found, and which modules are stood in for."""

    def __init__(self, model: nn.Module, cap: Capture) -> None:
        self.model = model
        self.calls = cap.calls
        self.out = Breaks()
        self.seen: set[tuple[str, str, int, str]] = set()
        self.done: set[int] = set()
        named = list(model.named_modules())
        self.modules = {id(m): m for _, m in named}
        self.path_of = {id(m): p for p, m in named}
        self.order_of = {p: self.calls[id(m)].order for p, m in named if id(m) in self.calls}
        self.groups = plan(model, self.calls)
        self.group_of = {id(m): g for g in self.groups for _, m in g.members}
        self.stood_in: set[int] = set()  # the modules the last trace stood in for

    def _trace(self, modules: list[nn.Module], stubs: list[tuple[nn.Module, Captured]]) -> Outcome:
        """One trace of `modules` with `stubs` standing in; `self.stood_in`: the ids of the
        modules that did (`Stubs.stood`)."""
        calls = [(m, self.calls[id(m)].args, self.calls[id(m)].kwargs) for m in modules]

        def run() -> Outcome:
            if len(calls) == 1:
                return trace(*calls[0])
            return trace_each(calls)

        with Stubs(stubs) as stood:
            outcome = run()
        self.out.traced += 1
        if _in_stub(outcome.exc or outcome.error):  # dynamo could not trace a rich rebuild
            with Stubs(stubs, plain=True) as stood:
                outcome = run()
            self.out.traced += 1
        self.stood_in = stood.stood
        return outcome

    def _stubs(self, ids: Iterable[int]) -> list[tuple[nn.Module, Captured]]:
        calls = self.calls
        return [(self.modules[i], calls[i]) for i in ids if calls[i].stubbable]

    def top_down(self) -> None:
        """The whole model traced at once, every block interchangeable with an earlier one
        stood in for: a model without a break costs one trace (`_settle`). Where that cannot
        answer for everything, every module not yet checked is checked on its own, deepest
        first, as `deepest_first` does: what the traces found stays found."""
        if id(self.model) not in self.calls:
            self.deepest_first(self.groups)
            return
        stood = {id(m) for g in self.groups for _, m in g.members[1:]}
        if not self._settle(self.model, [self.model], stood):
            self.deepest_first(self.groups)

    def _settle(self, root: nn.Module, modules: list[nn.Module], stood: set[int]) -> bool:
        """Trace `modules` (the model itself, or `root`'s children one after another) until
        they trace to the end. At a break, it is recorded for its owner's group, the owner's
        children are settled the same way (the trace stopped inside the owner, so those after
        the break were not traced), the group is stood in for, and the modules traced again.
        False where that cannot go on: a break in the root's own forward, an owner that cannot
        be stood in for or is not known for sure, a trace that fails otherwise."""
        for _ in range(_MAX_ROUNDS):
            todo = [m for m in modules if id(m) not in stood]
            if not todo:
                return True
            stubs = self._stubs(stood)
            outcome = self._trace(todo, stubs)
            if outcome.error is not None:  # not a break: each module on its own says where
                return False
            if outcome.exc is None:
                self.done.update(id(m) for t in todo for m in t.modules())
                return True
            frames = list(getattr(outcome.exc, "real_stack", None) or [])
            owner = owner_of(root, frames, True, self.stood_in)
            group = self.group_of.get(id(owner)) if owner is not None else None
            if owner is None or group is None or id(owner) in self.done:
                return False  # an owner not known for sure, or a stand-in that did not take
            if owner is root and root not in modules:
                return False  # in none of the children: the caller checks them one by one
            here = group.members if owner is group.module else [(self.path_of[id(owner)], owner)]
            _record(self.out, here, owner, outcome.exc, self.seen, self.order_of)
            members = [m for _, m in group.members]
            self.done.update(id(m) for m in members)
            if owner is root or not all(self.calls[id(m)].stubbable for m in members):
                return False
            children = sorted(
                (c for c in owner.children() if id(c) in self.calls and id(c) not in self.done),
                key=lambda c: self.calls[id(c)].order,
            )
            if children and not self._settle(owner, children, stood):
                inner = {id(m) for m in owner.modules() if m is not owner}
                self.deepest_first([g for g in self.groups if id(g.module) in inner])
            stood.update(id(m) for m in members)
        return False

    def deepest_first(self, groups: list[Group]) -> None:
        """Each group traced on its own, deepest first, with the children already checked
        stood in for (`plan` orders the groups)."""
        out = self.out
        for group in groups:
            if id(group.module) in self.done:
                continue
            rep = group.module
            inner = [id(m) for m in rep.modules() if m is not rep and id(m) in self.done]
            outcome = self._trace([rep], self._stubs(inner))
            self.done.update(id(m) for _, m in group.members)
            if outcome.error is not None:
                if group.path == "":
                    out.root_error = _first_line(outcome.error)
                else:
                    out.errors.append(
                        f"{group.path}: dynamo could not trace it ({_first_line(outcome.error)})"
                    )
            elif outcome.exc is not None:
                _record(out, group.members, rep, outcome.exc, self.seen, self.order_of)


def _record(
    out: Breaks,
    members: list[tuple[str, nn.Module]],
    rep: nn.Module,
    exc: BaseException,
    seen: set[tuple[str, str, int, str]],
    order_of: dict[str, int],
) -> None:
    """One trace's break, owned, for every member of its group (each at its own path)."""
    frames = list(getattr(exc, "real_stack", None) or [])
    inner = getattr(exc, "innermost_user_frame_summary", None) or (frames[-1] if frames else None)
    owner = owner_of(rep, frames) or rep
    rel = _relative(rep, owner)
    said = describe(exc)
    file = str(getattr(inner, "filename", "") or "")
    line = int(getattr(inner, "lineno", 0) or 0)
    source = str(getattr(inner, "line", "") or "").strip()
    if file == OWN_FILE:  # it broke on the module call itself: no user frame to show
        (file, line), source = defined_at(owner), ""
    cls = original_class(type(owner)).__name__
    for base, _member in members:
        path = _join(base, rel)
        key = (path, file, line, said.kind)
        if key in seen:
            if base == members[0][0] and owner is not rep:
                out.notes.append(
                    f"{base or '(root)'}: its trace stops at the break already reported in "
                    f"{path or '(root)'}, whose output could not stand in for it (the fake probe "
                    "stopped there, or it returned other shapes on other calls); the rest of "
                    f"{base or 'the root'}'s forward was not traced"
                )
            continue
        seen.add(key)
        found = GraphBreak(
            path, cls, said.kind, said.reason, said.hint, said.url, file, line, source
        )
        out.breaks.append((order_of.get(path, order_of.get(base, 0)), found))
