"""Which blocks of a model are interchangeable for the memo (`_fake.memo`): `Signatures` per
module and `stub_targets`, the outermost repeated ones. See `_fake.memo` for what a signature
covers and why transformers' ``layer_idx`` is relaxed.
"""

from __future__ import annotations

import functools
import types
from collections import Counter
from collections.abc import Hashable
from typing import Any

import torch
from torch import nn

from .memo_cache import PLAIN

__all__ = ["Signatures", "stub_targets", "tensor_key"]

_MODULE_INTERNALS = frozenset(vars(nn.Module())) | {"forward"}
_INDEX_ATTRS = frozenset({"layer_idx"})
_NONE: frozenset[int] = frozenset()
# Attribute values keyed as themselves with their type (`_attr_key`), checked by exact type.
_PLAIN_TYPES = frozenset(PLAIN)


def _attr_key(value: Any, owner: Any = None, depth: int = 3) -> Hashable:
    """A value's key: equal values give equal keys, whatever object holds them. Containers,
    functions and unregistered stateless modules are keyed by what they hold, so that an attribute
    each block makes for itself keeps blocks interchangeable: kernels' ``new_init`` gives every
    layer its own ``_kernel_funcs`` dict of parameter-free kernel modules (transformers 5.25), a
    checkpoint wrapper its own ``partial(checkpoint, ...)``, a per-instance forward a closure over
    the block's own bound method. `owner` (the block) is keyed as itself wherever it appears."""
    if isinstance(value, PLAIN):
        return (type(value), value)
    if value is owner and owner is not None:
        return ("self",)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.stride(), value.dtype, value.device)
    if depth > 0:
        made = _held_key(value, owner, depth - 1)
        if made is not None:
            return made
    # Anything else (a config object) is equal only to itself: sharing one config object still
    # matches, two different ones never do.
    return ("id", id(value))


def _held_key(value: Any, owner: Any, depth: int) -> Hashable | None:
    t = type(value)
    if t is tuple or t is list:
        return (t, tuple([_attr_key(v, owner, depth) for v in value]))
    if t is dict:
        if not all(isinstance(k, PLAIN) for k in value):
            return None
        return ("dict", tuple([(k, _attr_key(v, owner, depth)) for k, v in value.items()]))
    if t is types.MethodType:
        return ("method", _attr_key(value.__self__, owner, depth), _attr_key(value.__func__))
    if t is types.FunctionType:
        cells = tuple([_cell_key(c, owner, depth) for c in value.__closure__ or ()])
        defaults = _attr_key(value.__defaults__, owner, depth)
        return ("fn", value.__code__, id(value.__globals__), cells, defaults)
    if t is functools.partial:
        func, args = _attr_key(value.func, owner, depth), _attr_key(value.args, owner, depth)
        return ("partial", func, args, _attr_key(value.keywords, owner, depth))
    if isinstance(value, nn.Module) and _stateless(value):
        d = vars(value)
        names = sorted(d.keys() - _MODULE_INTERNALS - {"training"})
        own = tuple([(k, _attr_key(d[k], value, depth)) for k in names])
        forward = _attr_key(d.get("forward"), value, depth)
        return ("module", t, own, forward, d.get("training"))
    return None


def _cell_key(cell: Any, owner: Any, depth: int) -> Hashable:
    try:
        return _attr_key(cell.cell_contents, owner, depth)
    except ValueError:  # an empty cell
        return ("empty",)


def _stateless(m: nn.Module) -> bool:
    """A module holding no tensor, child or hook of its own: its class and plain attributes are
    all that its calls depend on (a kernel function made a module)."""
    return not (
        m._parameters or m._buffers or m._modules or m._forward_hooks or m._forward_pre_hooks
    )


def tensor_key(t: torch.Tensor | None) -> Hashable:
    """A tensor's metadata as a call's outputs may depend on it (``requires_grad`` included)."""
    if t is None:
        return None
    return (tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad)


class Signatures:
    """Per module (by id): `exact`, equal for interchangeable blocks; `relaxed`, equal for blocks
    that differ at most in their cache index (an int attribute ``layer_idx``, transformers' name
    for it), kept only for modules holding an index (elsewhere it is the exact one); `index`, the
    one index value a block's subtree holds, if exactly one. Modules that cannot be memoised
    (hooks, a child that cannot, or a child reached again by another path: a shared object's
    records live at its first path only) are absent from all of them.

    `modules`: every module once, in pre-order at its first path (`paths`), if the caller has
    that list (the probe's run does); else it is made here. One loop over it, children before
    parents, does all per-module work, kept lean (a recursive visit, per-module generators and a
    sorted set difference of every module's attribute names were the largest part of a fake
    probe of many small modules: bench/README.md, "Figures behind choices"); what depends only
    on the class and the order of its attribute names is read once per such layout."""

    def __init__(
        self,
        model: nn.Module,
        paths: dict[int, str],
        modules: list[nn.Module] | None = None,
        unshared: bool = False,
    ) -> None:
        self.exact: dict[int, int] = {}
        # Why a module has no signature (`unreplayed`): id -> (what, child name or "").
        self.unsigned: dict[int, tuple[str, str]] = {}
        self.keys: dict[Hashable, int] = {}  # every signature's key (`unreplayed` reads them)
        self.relaxed: dict[int, int] = {}
        self.index: dict[int, int] = {}
        self._indices: dict[int, frozenset[int]] = {}
        # `unshared`: the caller knows that no module has a second path, so no child's path
        # needs checking (the usual model; a string built and compared per child otherwise).
        self._sign(_preorder(model) if modules is None else modules, paths, unshared)

    def _sign(self, modules: list[nn.Module], paths: dict[int, str], unshared: bool) -> None:
        exact_of, relaxed_of, indices_of = self.exact, self.relaxed, self._indices
        index_of = self.index
        interned: dict[Hashable, int] = self.keys
        intern = interned.setdefault
        # Per class and order of instance attributes: the attributes that go into the key (the
        # non-internal ones, sorted so that the key does not depend on the order they were set
        # in) and the cache index attributes a relaxed key leaves out.
        layouts: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        plain = _PLAIN_TYPES
        get_path = paths.get
        for m in reversed(modules):
            key = id(m)
            d = vars(m)
            if "_forward_hooks" in d:  # read from the dict: an attribute lookup walks the MRO
                ok = not (
                    d["_forward_hooks"]
                    or d["_forward_pre_hooks"]
                    or d["_backward_hooks"]
                    or d.get("_backward_pre_hooks")
                )
            else:  # e.g. a ScriptModule's, behind its own attribute access
                ok = not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)
                ok = ok and not getattr(m, "_backward_pre_hooks", None)
            if not ok:
                self.unsigned[key] = ("hooks", "")
            kids: list[tuple[str, int | None]] = []
            # Children whose relaxed signature differs from their exact one: (position, relaxed).
            moved: list[tuple[int, int]] = []
            indices = _NONE
            children = m._modules
            if children:
                prefix = ""
                if not unshared:
                    path = get_path(key)
                    prefix = path + "." if path else ""
                for name, child in children.items():
                    if child is None:
                        kids.append((name, None))
                        continue
                    ck = id(child)
                    sub = exact_of.get(ck)
                    if sub is None or (not unshared and get_path(ck) != prefix + name):
                        ok = False  # not memoisable, or another path to a module seen before
                        why = "child" if sub is None else "shared"
                        self.unsigned.setdefault(key, (why, name))
                        continue
                    if ck in indices_of:
                        moved.append((len(kids), relaxed_of[ck]))
                        indices = indices | indices_of[ck]
                    kids.append((name, sub))
            if not ok:
                continue
            cls = type(m)
            layout_key = (cls, *d)
            layout = layouts.get(layout_key)
            if layout is None:
                names = tuple(sorted(d.keys() - _MODULE_INTERNALS))
                # transformers' convention only (checked across its models): ``layer_idx`` is
                # the layer's cache slot, or a scalar factor; a user's own attribute of that name
                # keeps its value.
                hf = cls.__module__.startswith("transformers.")
                layout = layouts[layout_key] = (names, tuple(_INDEX_ATTRS & d.keys()) if hf else ())
            names, index_names = layout
            attrs: tuple[Any, ...] = ()
            if names:
                values = [d[k] for k in names]
                attrs = tuple(
                    [
                        (k, (type(v), v) if type(v) in plain else _attr_key(v, m))
                        for k, v in zip(names, values)
                    ]
                )
            # Its own train/eval flag: a run takes each module's mode, and the modes change the path.
            attrs += (("training", d.get("training")),)
            rattrs = attrs
            if index_names:
                own = frozenset(d[k] for k in index_names if type(d[k]) is int)
                if own:
                    rattrs = tuple(
                        (k, ("index",)) if k in _INDEX_ATTRS and type(d[k]) is int else (k, v)
                        for k, v in attrs
                    )
                    indices = indices | own
            ps, bs = d.get("_parameters"), d.get("_buffers")
            if ps is None or bs is None:
                ps, bs = m._parameters, m._buffers
            params = _tensor_keys(ps) if ps else ()
            buffers = _tensor_keys(bs) if bs else ()
            # An instance forward (kernelize's, a user's decorator, a checkpoint wrapper's) is
            # keyed by what it is, the block's own bound method keyed as such.
            forward = _attr_key(d["forward"], m) if "forward" in d else None
            exact = intern((cls, forward, attrs, params, buffers, tuple(kids)), len(interned))
            exact_of[key] = exact
            if not indices:
                continue  # no index below: the relaxed signature is the exact one
            for pos, sub_relaxed in moved:
                kids[pos] = (kids[pos][0], sub_relaxed)
            relaxed_key = ("relaxed", cls, forward, rattrs, params, buffers, tuple(kids))
            relaxed_of[key] = intern(relaxed_key, len(interned))
            indices_of[key] = indices
            if len(indices) == 1:
                index_of[key] = next(iter(indices))


def _tensor_keys(tensors: dict[str, Any]) -> tuple[Any, ...]:
    """(name, `tensor_key`) of each entry, as `Signatures` keys them (``Size`` for the shape:
    equal to the tuple)."""
    return tuple(
        [
            (k, None if t is None else (t.shape, t.stride(), t.dtype, t.device, t.requires_grad))
            for k, t in tensors.items()
        ]
    )


def _preorder(model: nn.Module) -> list[nn.Module]:
    """Every module once, pre-order, at its first path (``named_modules``' order)."""
    seen: set[int] = set()
    out: list[nn.Module] = []
    todo = [model]
    while todo:
        m = todo.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        out.append(m)
        todo.extend(c for c in reversed(m._modules.values()) if c is not None)
    return out


def stub_targets(sigs: Signatures, model: nn.Module) -> dict[int, tuple[Hashable, int | None]]:
    """The blocks a memo stubs, by id: (signature key, cache index or None). Only the outermost
    exactly repeated modules: inside such a block the first instance runs its children anyway,
    and fewer stubs keep set-up and calls cheap. Inside a block repeated up to its cache index,
    children keep theirs: that block may not replay (no cache argument, or its second instance
    did something else)."""
    out: dict[int, tuple[Hashable, int | None]] = {}
    exact = Counter(sigs.exact.values())
    relaxed = Counter(sigs.relaxed[k] for k in sigs.index)

    def mark(m: nn.Module, inside: bool) -> None:
        key = id(m)
        sig = sigs.exact.get(key)
        repeats = sig is not None and exact[sig] > 1
        if not inside:
            if repeats:
                out[key] = (("exact", sig), None)
            elif key in sigs.index and relaxed[sigs.relaxed[key]] > 1:
                out[key] = (("relaxed", sigs.relaxed[key]), sigs.index[key])
        if inside or repeats:
            return  # nothing below is marked: each mark needs `inside` False
        for child in m._modules.values():
            if child is not None:
                mark(child, False)

    mark(model, False)
    return out
