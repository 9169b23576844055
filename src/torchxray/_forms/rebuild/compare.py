"""How a build compares with the live module: the parts that differ (``differences``), how far
it is (``weight``, the search's score), and the first difference in words (``sentence``).

Not a stage: the search (``_forms/candidates/``) scores each candidate with these, and the gate
(``_forms/exact/``) decides with the same, so what the search calls exact the gate agrees with;
an edit's own check (``_patch/gate.py``) reads them too.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import torch
from torch import nn

from ..._cast import to_like
from ..._text import short
from .parts import Parts

__all__ = [
    "Check",
    "Difference",
    "cast_like",
    "change",
    "differences",
    "floating_dtype",
    "sentence",
    "telling",
    "weight",
]

MAX_SENTENCE = 400


@dataclass(frozen=True, slots=True)
class Difference:
    """One part that differs: ``aspect`` is "module" (present on one side only), "class",
    "repr <i>", "children", "param <name>", "buffer <name>", "same" (the module is the one at
    another path), "tied <name>" (the parameter is the one at another path) or "attr <name>";
    ``live`` and ``built`` are its texts (None where absent)."""

    path: str
    aspect: str
    live: str | None
    built: str | None


@dataclass
class Check:
    """A build's answer against the live module: ``reason`` is "" when it rebuilds the module
    exactly (the gate's answer for a form, ``_forms/exact/``; the search's for its best build)."""

    reason: str
    diffs: list[Difference] = field(default_factory=list)
    base: Parts | None = None  # the unchanged rebuild's parts (None when it could not be built)
    seconds: float = 0.0
    cut: bool = False  # the build was stopped at the form's safety ceiling: not checked
    # The values rebuild every logical part; only tensor types differ, which a constructor does
    # not make (a quantized weight): an edit carries them over (``typed``).
    typed: bool = False


def _under(path: str, roots: set[str]) -> bool:
    return any(path == r or path.startswith(r + ".") for r in roots)


def differences(live: Parts, built: Parts) -> list[Difference]:
    """Parts that differ, in the live module's order. A submodule on one side only is one
    difference (its own parts are not listed). An attribute set on one side only is not compared:
    a forward or the user may add attributes after construction (caches), and a constructor's
    value missing from the live module is one the live module dropped."""
    out: list[Difference] = []
    gone = [p for p in live.summary if p not in built.summary]
    new = [p for p in built.summary if p not in live.summary]
    roots: set[str] = set()
    for p in gone:
        if not _under(p, roots):
            out.append(Difference(p, "module", live.summary[p], None))
            roots.add(p)
    for p in new:
        if not _under(p, roots):
            out.append(Difference(p, "module", None, built.summary[p]))
            roots.add(p)
    for key, a in live.items.items():
        if key[0] not in built.summary:
            continue
        b = built.items.get(key)
        if b is None and key[1].startswith("attr "):
            continue
        if a != b:
            out.append(Difference(key[0], key[1], a, b))
    for key, b in built.items.items():
        if key[0] in live.summary and key not in live.items and not key[1].startswith("attr "):
            out.append(Difference(key[0], key[1], None, b))
    order = {p: i for i, p in enumerate(live.summary)}
    out.sort(key=lambda d: order.get(d.path, len(order)))
    return out


def _reordered(d: Difference) -> bool:
    names = [(t or "").split(", ") for t in (d.live, d.built)]
    return sorted(names[0]) == sorted(names[1])


def telling(diffs: list[Difference]) -> list[Difference]:
    """Without the "children" differences that added or missing submodules explain."""
    return [d for d in diffs if d.aspect != "children" or _reordered(d)] or diffs


def change(d: Difference, live: Parts, built: Parts) -> str:
    """``d`` as a change that was made: "dropout: Dropout(p=0.0) -> Dropout(p=0.1)"."""
    where = d.path or "the module"
    if d.aspect == "module":
        return f"{where}: added {d.built}" if d.live is None else f"{where}: removed {d.live}"
    if d.aspect == "class" or d.aspect.startswith("repr") or d.aspect == "children":
        return f"{where}: {live.summary.get(d.path, '?')} -> {built.summary.get(d.path, '?')}"
    name = d.aspect.partition(" ")[2]
    label = f"{d.path}.{name}" if d.path and name else name or where
    if d.aspect == "same" or d.aspect.startswith("tied "):
        return f"{label}: {_owner(d.live)} -> {_owner(d.built)}"
    return f"{label}: {d.live} -> {d.built}"


def _owner(path: str | None) -> str:
    return "its own" if path is None else f"the one at {path or 'the module'}"


def _one(d: Difference, live: Parts, built: Parts) -> str:
    where = d.path or "the module"
    if d.aspect == "module":
        if d.built is None:
            return f"{where} ({short(d.live or '', 80)}) would be missing"
        return f"{where} ({short(d.built, 80)}) would be added"
    if d.aspect == "class" or d.aspect.startswith("repr"):
        a, b = live.summary.get(d.path, "?"), built.summary.get(d.path, "?")
        if a != b:
            return f"{where} would be {short(b, 120)}, the live one is {short(a, 120)}"
    kind, _, name = d.aspect.partition(" ")
    if kind in ("same", "tied"):
        what = f"{d.path}.{name}" if name and d.path else name or where
        noun = "parameter" if name else "module"
        if d.built is None:
            return (
                f"{what} would be a {noun} of its own, the live one is {d.live}'s "
                f"(one {noun} at two paths)"
            )
        if d.live is None:
            return f"{what} would be {d.built}'s, the live one is a {noun} of its own"
        return f"{what} would be {d.built}'s, the live one is {d.live}'s"
    if kind == "children":
        return f"{where} would hold ({d.built}), the live one holds ({d.live})"
    label = f"{d.path}.{name}" if d.path else name
    if d.built is None:
        return f"{label} would be missing (the live one is {short(d.live or '', 80)})"
    if d.live is None:
        return f"{label} would be added ({short(d.built, 80)})"
    return f"{label} would be {short(d.built, 100)}, the live one is {short(d.live, 100)}"


def sentence(diffs: list[Difference], live: Parts, built: Parts) -> str:
    """The first difference in words, and how many more (one line)."""
    diffs = telling(diffs)
    if not diffs:
        return ""
    lead, head = "", diffs[0]
    # A layer scripted after construction (torch.jit.script): no constructor argument makes it
    # again, so the sentence says that first, whichever of its parts differs first.
    scripted = live.scripted - built.scripted
    at = next((d for d in diffs if _under(d.path, set(scripted))), None)
    if at is not None:
        root = min((p for p in scripted if _under(at.path, {p})), key=len)
        lead, head = (
            f"{root or 'the module'} is a TorchScript module (torch.jit.script), which the "
            "form cannot rebuild exactly: ",
            at,
        )
    first = lead + _one(head, live, built)
    others = {d.path for d in diffs if d.path != head.path}
    if others:
        more = ", ".join(sorted(p or "the module" for p in others)[:4])
        first += f" (and {len(others)} more: {more}{', ...' if len(others) > 4 else ''})"
    return short(first, MAX_SENTENCE)


def weight(diffs: list[Difference], live: Parts, built: Parts) -> int:
    """How far a build is from the live module: one per differing part, a whole submodule's
    parts for one that is on one side only (the search's score; 0 is exact). In O(n log n):
    a model whose build lacks hundreds of blocks made it quadratic, most of a search's CPU."""
    total = 0
    paths: dict[int, list[str]] = {}
    for d in diffs:
        if d.aspect != "module":
            total += 1
            continue
        side = live if d.built is None else built
        got = paths.get(id(side))
        if got is None:
            got = paths[id(side)] = sorted(p for p, _ in side.items)
        # The part itself, then those under it: "a.b." up to "a.b/" ("/" follows "." in order).
        at = bisect.bisect_right(got, d.path) - bisect.bisect_left(got, d.path)
        below = bisect.bisect_left(got, d.path + "/") - bisect.bisect_left(got, d.path + ".")
        total += at + below
    return total


def floating_dtype(module: nn.Module) -> torch.dtype | None:
    for t in [*module.parameters(), *module.buffers()]:
        if t.is_floating_point():
            return t.dtype
    return None


def cast_like(built: nn.Module, dtype: torch.dtype | None) -> None:
    """Cast ``built``'s floating tensors to ``dtype``, as an edit places a replacement (its
    complex ones kept: ``_cast.py``)."""
    if dtype is not None and floating_dtype(built) not in (None, dtype):
        to_like(built, dtype=dtype)
