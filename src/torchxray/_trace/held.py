"""What containers hold, copied, compared by identity and put back in place.

A forward that appends to ``self.seen``, fills ``self.memo[k]`` or grows a registry keeps its
container object and changes what it holds: the attribute compare of `_fake/state.py` cannot see
that. `Held` copies each container reachable from a starting set of values (lists, tuples'
contents, dicts and their subclasses, sets, deques, and a plain object's attributes), to a
bounded depth, each container once. `changed()` compares by identity (``all(map(is_, ...))``, a C
loop: an equal new object is a change too, and no value's ``__eq__`` runs), `restore()` puts the
old contents back into the same container objects.
"""

from __future__ import annotations

import collections
import contextlib
import operator
import sys
import types
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

__all__ = ["HOOK_SLOTS", "Held", "MAX_DEPTH", "MAX_ITEMS"]

MAX_DEPTH = 3  # an attribute's container (1), what it holds (2), and one level more (3)
MAX_ITEMS = 100_000  # a larger container is compared by length only (and not put back)

# Per exact type: how its contents are copied. Subclasses are looked up once along their MRO.
_SEQ, _MAP, _SET, _DEQUE, _OBJ, _TUPLE, _SKIP = range(7)
_KIND: dict[type, int] = {
    list: _SEQ,
    dict: _MAP,
    collections.OrderedDict: _MAP,
    collections.defaultdict: _MAP,
    set: _SET,
    collections.deque: _DEQUE,
    tuple: _TUPLE,
}
# Never opened: modules are snapshot as modules; tensors by `_fake/state.py` and `_trace/tensors.py`;
# code, classes and C objects hold no state a forward writes through Python attributes.
_OPAQUE = (
    nn.Module,
    torch.Tensor,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.ModuleType,
    types.CodeType,
    str,
    bytes,
    int,
    float,
    complex,
    bool,
    torch.dtype,
    torch.device,
)
_is = operator.is_


# Other classes, as they are met: held weakly (a user's class must be free to go).
_LEARNT: weakref.WeakKeyDictionary[type, int] = weakref.WeakKeyDictionary()


def _kind(t: type) -> int:
    k = _KIND.get(t)
    if k is not None:
        return k
    try:
        k = _LEARNT.get(t)
    except TypeError:  # a class that cannot be referenced weakly
        k = None
    if k is not None:
        return k
    if issubclass(t, _OPAQUE) or t.__module__ in ("builtins", "weakref"):
        k = _SKIP
    elif issubclass(t, dict):
        k = _MAP
    elif issubclass(t, list):
        k = _SEQ
    elif issubclass(t, set):
        k = _SET
    elif issubclass(t, collections.deque):
        k = _DEQUE
    elif issubclass(t, tuple):
        k = _TUPLE
    elif getattr(t, "__dictoffset__", 0) and not _machinery(t):
        # A plain object's attributes (a config, a state holder): what a forward may change in
        # place.
        k = _OBJ
    else:
        k = _SKIP
    if t.__module__ == "builtins":
        _KIND[t] = k
    else:
        with contextlib.suppress(TypeError):
            _LEARNT[t] = k
    return k


def _machinery(t: type) -> bool:
    """Classes of the standard library (threading's events and conditions, logging's loggers)
    and torch's own (hook handles, process groups, modes) hold the run-time machinery of a
    program, not a model's state: putting their insides back would break them (a condition's
    waiters)."""
    top = (t.__module__ or "").split(".", 1)[0]
    return top in _STDLIB or top == "torch"


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"builtins", "_thread"}


# The containers every nn.Module holds, but `_parameters` and `_buffers` (the run's attribute
# snapshot, `_fake/state.py`, copies those for every module already). Read in one C call each
# (itemgetter): the hook dicts are copied only when not empty (a hook added to an empty one is
# found by its handle id, `_trace/modules.py`); `_modules` and the non-persistent buffer names
# are kept with their lengths.
_PLAIN = vars(nn.Module())
HOOK_SLOTS = tuple(k for k, v in _PLAIN.items() if isinstance(v, dict) and "hooks" in k)
_HOOKS_OF = operator.itemgetter(*HOOK_SLOTS)
_SLOTS = ("_modules", "_non_persistent_buffers_set")
_SLOTS_OF = operator.itemgetter(*_SLOTS)
_PLAIN_KEYS = frozenset(_PLAIN)
# Values that hold no container a forward could fill: hyperparameters, and the functions and
# bound methods a probe itself sets on a module while it runs (`_probe/wrap.py`).
_SCALARS = frozenset(
    {int, float, bool, str, type(None), torch.dtype, torch.device}
    | {types.FunctionType, types.MethodType, types.BuiltinFunctionType}
)


class Held:
    """Containers reached from the values given to `take`, each with a copy of its contents."""

    def __init__(self) -> None:
        # (path, the module's standard containers, their lengths) per module taken
        self.slots: list[tuple[str, tuple[Any, ...], tuple[int, ...]]] = []
        self.seen: set[int] = set()
        # (container, kind, copy, owner path, attribute): copy is a list (sequences, deques),
        # (keys, values) lists (maps, object attributes), a set, or None for an empty container.
        self.items: list[tuple[Any, int, Any, str, str]] = []
        self.unchecked: list[str] = []  # containers past MAX_ITEMS: "path.attr"

    def take_module(self, m: nn.Module, path: str) -> None:
        """What module `m` holds: its standard containers (`_modules` copied when not empty,
        hook dicts when not empty) and every container among its own attributes."""
        d = m.__dict__
        try:
            slots = _SLOTS_OF(d)
            hooks = _HOOKS_OF(d)
        except KeyError:  # a module that skipped nn.Module.__init__'s attributes
            self.take(d.items(), path)
            return
        mods, names = slots
        self.slots.append((path, slots, (len(mods), len(names))))
        if mods:  # copied, not opened: what it holds are modules, taken as modules
            self.take((("_modules", mods),), path, MAX_DEPTH)
        if any(hooks):
            self.take(((k, v) for k, v in zip(HOOK_SLOTS, hooks) if v), path)
        if len(d) > len(_PLAIN_KEYS):
            scalars = _SCALARS
            for k in d.keys() - _PLAIN_KEYS:
                v = d[k]
                t = type(v)
                if t in scalars or (t is tuple and all(type(x) in scalars for x in v)):
                    continue  # hyperparameters (a LayerNorm's normalized_shape): nothing inside
                self.take(((k, v),), path)

    def take(self, named: Iterable[tuple[str, Any]], path: str, depth: int = 1) -> None:
        """Copy every container among the (attribute, value) pairs, and those they hold."""
        seen, items = self.seen, self.items
        for attr, value in named:
            k = _KIND.get(type(value))
            if k is None:
                k = _kind(type(value))
            if k == _SKIP:
                continue
            key = id(value)
            if key in seen:
                continue
            seen.add(key)
            if k == _TUPLE:  # immutable itself: only what it holds can change
                if depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
                    self.take(((f"{attr}[{i}]", v) for i, v in enumerate(value)), path, depth + 1)
                continue
            if k == _OBJ:
                try:
                    contents = vars(value)
                except Exception:  # noqa: BLE001 - a __dict__ guarded by its class
                    continue
                if type(contents) is not dict:
                    continue
                target: Any = contents
            else:
                target = value
            n = len(target)
            if n > MAX_ITEMS:
                self.unchecked.append(f"{path}.{attr}" if path else attr)
                continue
            if n == 0:
                items.append((target, k, None, path, attr))
                continue
            if k in (_MAP, _OBJ):
                copy: Any = (list(target), list(target.values()))
                inner: Iterable[Any] = copy[1]
                names: Iterable[str] = (f"{attr}[{k2!r}]" for k2 in copy[0])
                if k == _OBJ:
                    names = (f"{attr}.{k2}" for k2 in copy[0])
            elif k == _SET:
                copy = set(target)
                inner, names = (), ()
            else:
                copy = list(target)
                inner = copy
                names = (f"{attr}[{i}]" for i in range(n))
            items.append((target, k, copy, path, attr))
            if depth < MAX_DEPTH:
                self.take(zip(names, inner), path, depth + 1)

    def changed(self) -> list[tuple[Any, int, Any, str, str]]:
        """The containers whose contents are not what was copied (by identity)."""
        out: list[tuple[Any, int, Any, str, str]] = []
        for path, slots, lens in self.slots:
            if tuple(map(len, slots)) != lens:
                for name, c, n in zip(_SLOTS, slots, lens):
                    if n == 0 and len(c):
                        out.append((c, _SET if type(c) is set else _MAP, None, path, name))
        for item in self.items:
            target, k, copy, _, _ = item
            if copy is None:
                if len(target):
                    out.append(item)
            elif k in (_MAP, _OBJ):
                keys, values = copy
                if len(target) != len(keys) or not all(map(_is, target.values(), values)):
                    out.append(item)
                elif not all(map(_is, target, keys)) and list(target) != keys:
                    out.append(item)
            elif k == _SET:
                if target != copy:
                    out.append(item)
            elif len(target) != len(copy) or not all(map(_is, target, copy)):
                out.append(item)
        return out

    @staticmethod
    def restore(item: tuple[Any, int, Any, str, str]) -> None:
        """The container's old contents, in the same object."""
        target, k, copy, _, _ = item
        if copy is None:
            target.clear()
        elif k in (_MAP, _OBJ):
            keys, values = copy
            target.clear()
            target.update(zip(keys, values))
        elif k == _SET:
            target.clear()
            target.update(copy)
        elif k == _DEQUE:
            target.clear()
            target.extend(copy)
        else:
            target[:] = copy

    @staticmethod
    def difference(item: tuple[Any, int, Any, str, str]) -> str:
        """What changed, in words: "1 item added", "key 'x' set"."""
        target, k, copy, _, _ = item
        before = 0 if copy is None else len(copy[0] if k in (_MAP, _OBJ) else copy)
        now = len(target)
        if k in (_MAP, _OBJ):
            old = set() if copy is None else set(copy[0])
            added = [key for key in target if key not in old]
            if added:
                what = "entry" if k == _MAP else "attribute"
                more = ", ..." if len(added) > 1 else ""
                return f"{len(added)} {what} added ({added[0]!r}{more})"
        if now > before:
            return f"{now - before} item{'s' if now - before > 1 else ''} added"
        if now < before:
            return f"{before - now} item{'s' if before - now > 1 else ''} removed"
        return "contents replaced"
