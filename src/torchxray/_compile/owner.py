"""Who owns a break, and what torch says of it: `describe(exc)` and `owner_of(frames, ...)`.

Dynamo's ``Unsupported`` carries the break type (``gb_type``), a message of "Explanation:",
"Hint:" lines and the graph-break page's address, and the user's frames (``real_stack``, outermost
first; frames of torch's module-call machinery left out). Its frames hold no locals, so the
module a frame belongs to is found by its code: from the traced module down, each frame is
matched with the forward code of the shallowest descendant that runs it; one match moves the
owner down, several (identical siblings a parent traces through) leave it where it is.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

from torch import nn

from .._signature import original

__all__ = ["Described", "defined_at", "describe", "owner_of"]

_URL = re.compile(r"(https?://\S+?)\.?\s*$", re.M)


@dataclass(frozen=True)
class Described:
    kind: str
    reason: str
    hint: str
    url: str


def describe(exc: BaseException) -> Described:
    """The break type, explanation, hints and page of a dynamo exception."""
    msg = str(getattr(exc, "msg", "") or exc)
    lines = [line.strip() for line in msg.splitlines()]
    kind = str(getattr(exc, "gb_type", "") or (lines[0] if lines else type(exc).__name__))
    reason = " ".join(
        line.removeprefix("Explanation:").strip()
        for line in lines
        if line.startswith("Explanation:")
    )
    hints = [line.removeprefix("Hint:").strip() for line in lines if line.startswith("Hint:")]
    url = ""
    for line in lines:
        if "graph break" in line and "http" in line:
            found = _URL.search(line)
            url = found.group(1) if found else ""
    if not reason:
        reason = next((line for line in lines if line), kind)
    return Described(kind, reason, "\n".join(hints), url)


def _code_of(module: nn.Module) -> Any:
    forward = getattr(type(module), "forward", None)
    try:
        return original(forward).__code__
    except (AttributeError, TypeError, ValueError):
        return None


_LAST: dict[Any, int] = {}


def _last_line(code: Any) -> int:
    last = _LAST.get(code)
    if last is None:
        last = _LAST[code] = max((line for *_, line in code.co_lines() if line), default=0)
    return last


def _runs(code: Any, frame: Any) -> bool:
    """`frame` runs `code`: same file and name, its line inside the function (two classes of
    one file both define ``forward``)."""
    return (
        code is not None
        and code.co_filename == frame.filename
        and code.co_name == frame.name
        and code.co_firstlineno <= (frame.lineno or 0) <= _last_line(code)
    )


def owner_of(
    root: nn.Module, frames: Sequence[Any], strict: bool = False, stood: Set[int] = frozenset()
) -> nn.Module | None:
    """The innermost module under `root` (itself included) whose forward a frame runs; with
    `strict`, None when a frame runs the forward of several modules at one depth (siblings of
    one class both traced through: which one is not known). Modules in `stood` (by id) were
    stood in for, so their class's forward never ran for them."""
    owner = root
    for frame in frames:
        if _runs(_code_of(owner), frame):
            continue
        level = list(owner.children())
        while level:
            hits = [m for m in level if id(m) not in stood and _runs(_code_of(m), frame)]
            if hits:
                if len(hits) == 1:
                    owner = hits[0]
                elif strict:
                    return None
                break
            level = [c for m in level for c in m.children()]
    return owner


def defined_at(module: nn.Module) -> tuple[str, int]:
    """Where `module`'s forward is defined: the line of a failure no frame of the user's shows
    (("", 0) for a forward without Python source, such as a TorchScript module's)."""
    try:
        forward = original(type(module).forward)
        return inspect.getsourcefile(forward) or "", forward.__code__.co_firstlineno
    except (TypeError, AttributeError, OSError):
        return "", 0
