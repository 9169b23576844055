"""Dotted-path bookkeeping for the patch engine: where each submodule is registered.

A *slot* is one entry of some module's ``_modules`` dict. Paths are the dotted names
``named_modules`` gives; a module reachable through several slots (or through a shared parent)
has several paths. Slots, not paths, are what a swap changes, so two paths through a shared parent
name the same slot.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

import torch
import torch.nn as nn

from .._text import closest

# What replace_all accepts: module classes (isinstance) or a regex fully matching a dotted path.
Match = type | tuple[type, ...] | str | re.Pattern[str]


class Slot(NamedTuple):
    """``parent._modules[key]`` holds ``module``; ``path`` is one dotted path that reaches it.
    A tuple: an index of a 100,000-module model makes one per module, and a frozen dataclass's
    ``__init__`` cost several times a tuple's (bench/README.md, "Measured, by file")."""

    path: str
    parent_path: str
    parent: nn.Module
    key: str
    module: nn.Module


class SlotIndex:
    """Every path of a model (aliases included) mapped to the slot that reaches it."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.slots: dict[str, Slot] = {}
        self.by_id: dict[int, list[str]] = {}
        slots, by_id = self.slots, self.by_id
        new = tuple.__new__
        # Every path is walked (``named_modules(remove_duplicate=False)``'s pre-order over
        # parents), so shared modules and shared parents show up at each place they are
        # registered; a parent's slots are listed when it is reached, in its `_modules` order.
        todo: list[tuple[str, nn.Module]] = [("", model)]
        pop, push = todo.pop, todo.append
        while todo:
            ppath, parent = pop()
            children = parent._modules
            if not children:
                continue
            prefix = ppath + "." if ppath else ""
            for key, child in children.items():
                if child is not None:
                    path = prefix + key
                    slots[path] = new(Slot, (path, ppath, parent, key, child))
                    ids = by_id.get(id(child))
                    if ids is None:
                        by_id[id(child)] = [path]
                    else:
                        ids.append(path)
            for key, child in reversed(children.items()):
                if child is not None:
                    push((prefix + key, child))

    def paths(self) -> list[str]:
        return list(self.slots)

    def module(self, path: str) -> nn.Module:
        if path == "":
            return self.model
        slot = self.slots.get(path)
        if slot is None:
            owner, _, leaf = path.rpartition(".")
            holder = self.model if owner == "" else getattr(self.slots.get(owner), "module", None)
            if holder is not None and (leaf in holder._parameters or leaf in holder._buffers):
                raise KeyError(
                    f"{path!r} is a parameter or buffer of {owner or 'the model'!r}, not a "
                    f"submodule; use the path {owner!r}"
                )
            raise missing_path(path, ["", *self.slots])
        return slot.module

    def paths_of(self, module: nn.Module) -> list[str]:
        """All paths reaching ``module`` (by identity), in ``named_modules`` order."""
        return list(self.by_id.get(id(module), ()))

    def contains(self, module: nn.Module) -> bool:
        return module is self.model or id(module) in self.by_id

    def ancestors(self, path: str) -> Iterator[nn.Module]:
        """The module at ``path``, then its parent, grandparent, ... up to the root."""
        while path:
            slot = self.slots[path]
            yield slot.module
            path = slot.parent_path
        yield self.model


def missing_path(path: str, known: list[str]) -> KeyError:
    """A KeyError that names the closest existing paths (so a typo is one glance away)."""
    close = closest(path, [p for p in known if p])
    if not close:
        # Nothing similar: show the top level instead, which is where people start reading.
        close = [p for p in known if p and "." not in p][:5]
    hint = ", ".join(repr(p) for p in close) if close else "(the model has no submodules)"
    return KeyError(f"no submodule at path {path!r}; closest existing paths: {hint}")


def tensors(module: nn.Module) -> Iterator[torch.Tensor]:
    return itertools.chain(module.parameters(), module.buffers())


def holds_meta(module: nn.Module) -> bool:
    return any(t.is_meta for t in tensors(module))


def tensor_bytes(module: nn.Module, seen: set[int]) -> int:
    """Bytes of ``module``'s parameters and buffers not already counted in ``seen`` (tensor ids);
    meta tensors hold no memory and count zero."""
    total = 0
    for t in tensors(module):
        if id(t) not in seen and not t.is_meta:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def targets(index: SlotIndex, match: Match) -> list[tuple[nn.Module, tuple[str, ...]]]:
    """Matched modules, each with the paths it will be replaced at (outermost matches only)."""
    pred: Callable[[str, nn.Module], bool]
    if isinstance(match, type) or (
        isinstance(match, tuple) and match and all(isinstance(c, type) for c in match)
    ):
        classes = match
        pred = lambda _p, m: isinstance(m, classes)  # noqa: E731
    elif isinstance(match, (str, re.Pattern)):
        try:
            rx = re.compile(match)
        except re.error as exc:
            raise ValueError(f"invalid path regex {match!r}: {exc}") from exc
        pred = lambda p, _m: rx.fullmatch(p) is not None  # noqa: E731
    else:
        raise TypeError(f"match must be a module class or a path regex, got {match!r}")
    hit = {id(s.module) for p, s in index.slots.items() if pred(p, s.module)}
    candidates = {p for ps in (index.by_id[i] for i in hit) for p in ps}

    def nested(slot: Slot) -> bool:
        parent = slot.parent_path
        while parent:
            if parent in candidates:
                return True
            parent = index.slots[parent].parent_path
        return False

    out: dict[int, tuple[nn.Module, list[str]]] = {}
    for path, slot in index.slots.items():
        if path in candidates and not nested(slot):
            out.setdefault(id(slot.module), (slot.module, []))[1].append(path)
    return [(m, tuple(ps)) for m, ps in out.values()]


def no_match(index: SlotIndex, match: Match) -> str:
    if isinstance(match, (str, re.Pattern)):
        pattern = match if isinstance(match, str) else match.pattern
        err = missing_path(pattern, index.paths())
        return f"no path fully matches {pattern!r} (re.fullmatch); " + str(err.args[0])
    present = sorted({type(s.module).__name__ for s in index.slots.values()})
    return f"no submodule is an instance of {match!r}; classes present: {', '.join(present)}"
