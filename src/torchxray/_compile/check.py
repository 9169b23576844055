"""The graph-break half of a check: every planned group traced, breaks owned and deduplicated.

`find_breaks(model, capture)` runs the traces of `_compile.plan` in order (deepest first), each
with the children already checked stubbed (`_compile.stubs`), and returns the breaks (each owned
by the innermost module whose forward holds it, `_compile.owner`), the notes on what could not be
checked, and the number of traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from .._text import short
from .._unwrap import original_class
from .capture import Capture
from .owner import defined_at, describe, owner_of
from .plan import plan
from .records import GraphBreak
from .stubs import STUB_FILE, Stubs
from .trace import OWN_FILE, trace

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
    calls = cap.calls
    out = Breaks()
    seen: set[tuple[str, str, int, str]] = set()
    done: set[int] = set()
    order_of = {p: calls[id(m)].order for p, m in model.named_modules() if id(m) in calls}
    for group in plan(model, calls):
        rep = group.module
        call = calls[id(rep)]
        stubs = [
            (m, calls[id(m)].output)
            for m in rep.modules()
            if m is not rep and id(m) in done and calls[id(m)].stubbable
        ]
        with Stubs(stubs):
            outcome = trace(rep, call.args, call.kwargs)
        out.traced += 1
        if _in_stub(outcome.exc or outcome.error):  # dynamo could not trace a rich rebuild
            with Stubs(stubs, plain=True):
                outcome = trace(rep, call.args, call.kwargs)
            out.traced += 1
        done.update(id(m) for _, m in group.members)
        if outcome.error is not None:
            if group.path == "":
                out.root_error = _first_line(outcome.error)
            else:
                out.errors.append(
                    f"{group.path}: dynamo could not trace it ({_first_line(outcome.error)})"
                )
        elif outcome.exc is not None:
            _record(out, group.members, rep, outcome.exc, seen, order_of)
    out.breaks.sort(key=lambda pair: (pair[0], pair[1].line))
    return out


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
    owner = owner_of(rep, frames)
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
