"""Memoising repeated identical blocks in a fake probe (80 identical decoder layers run once).

Fake tensors carry no data, so a block's outputs, and everything its submodules see, depend only
on the block's structure and its inputs' metadata. Two blocks with the same *signature* (class,
forward, plain attributes, parameter/buffer metadata, children's signatures, no hooks of their own)
called with the same input metadata give the same records. The first such call runs; later ones
return fresh fake tensors of the remembered shapes and copy the remembered records under their own
path. `tests/test_probe.py` and `tests/test_probe_memo_real.py` check that this equals a full probe.

transformers' decoder layers differ in one attribute, ``layer_idx``, and are called with a cache
object they write to at that index (`_probe.memo_cache`). Such blocks share a *relaxed*
signature; a call is keyed on its tensors' metadata and on the state of its own cache slot. The
first block runs and must change nothing in the cache but its own slot; a second block of another
index runs too and must do exactly the same (same records, same slot state after), which catches a
forward that treats one layer apart; then the rest are replayed, each replay giving its slot the
state the first block's slot ended with. What this cannot see is a forward that branches on
``layer_idx`` from the third layer on, or reads another layer's slot; transformers' own models use
``layer_idx`` only as the cache index or a scalar factor, so the relaxation applies to classes
from the ``transformers`` package only, and only when a cache is passed.

Skipping a forward needs the call itself: the outermost modules whose signature occurs more than
once get, inside the probe's recording (`_probe.wrap`), a stub that consults the memo.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .calls import Call, Recorder
from .edges import inner_edges, mark, replay_edges, unmark
from .fake import fresh as new_tensor
from .memo_cache import (
    is_hf_cache,
    materialise,
    only_slot_changed,
    slot_key,
    snapshot,
    state_key,
    stub_targets,
    template,
)

_PLAIN = (bool, int, float, str, type(None), torch.dtype, torch.device)
_MODULE_INTERNALS = frozenset(vars(nn.Module())) | {"forward"}
_MISSING = object()


def _attr_key(value: Any) -> Hashable:
    if isinstance(value, _PLAIN):
        return (type(value), value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, _PLAIN) for v in value):
        return (type(value), tuple(value))
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.stride(), value.dtype, value.device)
    # Anything else (a config object, a function) is equal only to itself: sharing one config
    # object still matches, two different ones never do.
    return ("id", id(value))


def _tensor_key(t: torch.Tensor | None) -> Hashable:
    if t is None:
        return None
    return (tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad)


_INDEX_ATTRS = frozenset({"layer_idx"})
_NONE: frozenset[int] = frozenset()


class Signatures:
    """Per module (by id): `exact`, equal for interchangeable blocks; `relaxed`, equal for blocks
    that differ at most in their cache index (an int attribute ``layer_idx``, transformers' name
    for it), kept only for modules holding an index (elsewhere it is the exact one); `index`, the
    one index value a block's subtree holds, if exactly one. Modules that cannot be memoised
    (hooks, or a child that cannot) are absent from all of them."""

    def __init__(self, model: nn.Module, paths: dict[int, str]) -> None:
        self.exact: dict[int, int] = {}
        self.relaxed: dict[int, int] = {}
        self.index: dict[int, int] = {}
        self._indices: dict[int, frozenset[int]] = {}
        self._interned: dict[Hashable, int] = {}
        self._seen: set[int] = set()
        self._paths = paths
        self._visit(model, "")

    def _intern(self, key: Hashable) -> int:
        return self._interned.setdefault(key, len(self._interned))

    def _visit(self, m: nn.Module, path: str) -> tuple[int, int, frozenset[int]] | None:
        key = id(m)
        if key in self._seen:  # shared object: its records live at its first path only
            if self._paths.get(key) != path or key not in self.exact:
                return None
            exact = self.exact[key]
            return exact, self.relaxed.get(key, exact), self._indices.get(key, _NONE)
        self._seen.add(key)
        ok = not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)
        ok = ok and not getattr(m, "_backward_pre_hooks", None)
        kids: list[tuple[str, int | None]] = []
        # Children whose relaxed signature differs from their exact one: (position, relaxed).
        moved: list[tuple[int, int]] = []
        indices = _NONE
        for name, child in m._modules.items():
            if child is None:
                kids.append((name, None))
                continue
            sub = self._visit(child, f"{path}.{name}" if path else name)
            if sub is None:
                ok = False
                continue
            if sub[2]:
                moved.append((len(kids), sub[1]))
                indices = indices | sub[2]
            kids.append((name, sub[0]))
        if not ok:
            return None
        # The few non-internal attributes found by a set difference (a C loop over ~20 keys),
        # sorted so that the key does not depend on the order they were set in.
        d = vars(m)
        attrs = tuple(sorted((k, _attr_key(d[k])) for k in d.keys() - _MODULE_INTERNALS))
        # transformers' convention only (checked across its models): ``layer_idx`` is the layer's
        # cache slot, or a scalar factor; a user's own attribute of that name keeps its value.
        rattrs = attrs
        if type(m).__module__.startswith("transformers.") and not _INDEX_ATTRS.isdisjoint(d):
            own = frozenset(d[k] for k in _INDEX_ATTRS if type(d.get(k)) is int)
            if own:
                rattrs = tuple(
                    (k, ("index",)) if k in _INDEX_ATTRS and type(d[k]) is int else (k, v)
                    for k, v in attrs
                )
                indices = indices | own
        params = tuple((k, _tensor_key(p)) for k, p in m._parameters.items())
        buffers = tuple((k, _tensor_key(b)) for k, b in m._buffers.items())
        forward = id(d.get("forward", _MISSING))
        exact = self._intern((type(m), forward, attrs, params, buffers, tuple(kids)))
        self.exact[key] = exact
        if not indices:
            # No index below: the relaxed signature is the exact one, and no second key is built
            # (this runs for every module).
            return exact, exact, _NONE
        rkids = list(kids)
        for pos, sub_relaxed in moved:
            rkids[pos] = (rkids[pos][0], sub_relaxed)
        relaxed = self._intern(("relaxed", type(m), forward, rattrs, params, buffers, tuple(rkids)))
        self.relaxed[key], self._indices[key] = relaxed, indices
        if len(indices) == 1:
            self.index[key] = next(iter(indices))
        return exact, relaxed, indices


def _input_key(
    args: tuple[Any, ...], kwargs: dict[str, Any], index: int | None = None
) -> tuple[Hashable, list[Any]] | None:
    """The metadata a call's outputs may depend on, and the Hugging Face caches among its
    arguments; None when an argument is an object the memo cannot key (it runs the call)."""
    if not kwargs and all(isinstance(a, torch.Tensor) for a in args):
        return tuple(_tensor_key(a) for a in args), []
    leaves, spec = pytree.tree_flatten((args, kwargs))
    parts: list[Hashable] = [str(spec)]
    caches: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            parts.append(_tensor_key(leaf))
        elif isinstance(leaf, _PLAIN):
            parts.append((type(leaf), leaf))
        elif index is not None and is_hf_cache(leaf):
            slot = slot_key(leaf, index)
            if slot is None:
                return None
            parts.append(slot)
            caches.append(leaf)
        else:
            return None  # an arbitrary object might steer the forward: run it every time
    if index is not None and not caches:
        # Without a cache the index has no known use: blocks of different indices stay apart.
        parts.append(("index", index))
    return tuple(parts), caches


_Meta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]


def _meta(t: torch.Tensor) -> _Meta:
    return (tuple(t.shape), t.stride(), t.dtype, t.device)


class _Entry:
    __slots__ = ("spec", "leaves", "metas", "descendants", "flops", "index", "effects", "confirmed")

    def __init__(
        self,
        spec: Any,
        leaves: list[Any],
        descendants: list[Any],
        flops: int,
        index: int | None,
        effects: list[tuple[dict[str, Any], Hashable]],
    ) -> None:
        self.spec = spec
        self.leaves = leaves
        self.metas = [_meta(t) if isinstance(t, torch.Tensor) else None for t in leaves]
        self.descendants = descendants
        self.flops = flops
        self.index = index  # the cache index of the block that ran (relaxed entries)
        # Per cache argument, in order: its slot's state after the call (template, key).
        self.effects = effects
        self.confirmed = index is None

    def same(self, other: _Entry) -> bool:
        """Whether a second block of another index did exactly what the first one did."""
        return (
            str(self.spec) == str(other.spec)
            and self.metas == other.metas
            and self.descendants == other.descendants
            and self.flops == other.flops
            and [k for _, k in self.effects] == [k for _, k in other.effects]
        )

    def outputs(self, fresh: bool = False) -> Any:
        # The first call's own output tensors are handed out again: they are fake (no data to
        # get wrong) and making new ones costs a fake dispatch each. Only if a caller changed one
        # in place (unsqueeze_, resize_) is a fresh tensor of the recorded metadata made.
        for i, meta in enumerate(self.metas):
            leaf = self.leaves[i]
            # `fresh`: edges follow tensor identity (`_probe.edges`): a replay needs its own.
            if meta is not None and (fresh or _meta(leaf) != meta):
                self.leaves[i] = new_tensor(meta, leaf)
        return pytree.tree_unflatten(self.leaves, self.spec)


_REFUSED = object()  # an entry whose second block did something else: always run


class Memo:
    """Made by a fake ProbeRun, which records each of `stubs()` around its stub. It reads the
    run's modules (pre-order, ``paths`` by id) and the recorder's open calls and log."""

    def __init__(
        self, model: nn.Module, modules: list[nn.Module], paths: dict[int, str], recorder: Recorder
    ) -> None:
        self.modules, self.paths, self.run = modules, paths, recorder
        self.sigs = Signatures(model, paths)
        self.entries: dict[Hashable, Any] = {}
        self.hits: list[str] = []
        # id(module) -> (signature key, cache index or None) for each stubbed module
        self.stubbed = stub_targets(self.sigs, model)

    def stubs(self) -> list[tuple[nn.Module, Callable[..., Any]]]:
        """(module, stub) for each outermost repeated block: the stub consults the memo and
        otherwise calls the module's own forward (read now, before the probe patches anything)."""
        out = []
        for m in self.modules:
            stubbed = self.stubbed.get(id(m))
            if stubbed is not None:
                sig, index = stubbed
                out.append((m, self._stub(sig, index, self.paths[id(m)], m.forward)))
        return out

    def _stub(
        self, sig: Hashable, index: int | None, path: str, original: Callable[..., Any]
    ) -> Callable[..., Any]:
        def forward(*args: Any, **kwargs: Any) -> Any:
            return self._call(path, sig, index, original, args, kwargs)

        return forward

    def _call(
        self,
        path: str,
        sig: Hashable,
        index: int | None,
        original: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        run = self.run
        own = run.stack[-1] if run.stack else None
        keyed = _input_key(args, kwargs, index)
        if own is None or own.path != path or keyed is None:
            return original(*args, **kwargs)
        ikey, caches = keyed
        key = (sig, ikey)
        entry = self.entries.get(key)
        if entry is _REFUSED:
            return original(*args, **kwargs)
        if entry is not None and (entry.confirmed or entry.index == index):
            # The inputs' leaves: a replay's edges come from whatever produced them.
            return self._replay(own, entry, caches, index, *pytree.tree_leaves((args, kwargs)))
        # The forward is called here, not in a helper: `_probe.failure` knows this frame as one
        # that calls out to the model.
        start, before = len(run.log), [snapshot(c) for c in caches]
        produced = run.produced  # the block's edges from its inputs, kept as such (`_probe.edges`)
        first_edge = len(produced.raw) if produced is not None else 0
        marked = mark(produced, pytree.tree_leaves((args, kwargs)))
        result = original(*args, **kwargs)
        fresh = self._describe(own, result, start, caches, before, index, first_edge)
        unmark(produced, marked, first_edge)
        if entry is None:
            if fresh is not None:
                self.entries[key] = fresh
        elif fresh is not None and entry.same(fresh):
            entry.confirmed = True  # a second index did the same: replay the rest
        else:
            self.entries[key] = _REFUSED
        return result

    def _describe(
        self,
        own: Call,
        result: Any,
        start: int,
        caches: list[Any],
        before: list[Any],
        index: int | None,
        first_edge: int = 0,
    ) -> _Entry | None:
        """What the block just did (its calls from ``log[start]`` on, its outputs, its caches'
        slots), or None where a replay could not repeat it."""
        run = self.run
        leaves, spec = pytree.tree_flatten(result)
        if not all(isinstance(leaf, (torch.Tensor, *_PLAIN)) for leaf in leaves):
            return None  # an arbitrary object may be mutable or stateful: no entry
        effects = []
        for cache, was in zip(caches, before):
            # The block may have changed its own slot (index), and nothing else of the cache.
            if was is None or index is None or not only_slot_changed(cache, was, index):
                return None
            slot = cache.layers[index]
            tmpl, now = template(slot), state_key(slot)
            if tmpl is None or now is None:
                return None
            effects.append((tmpl, now))
        cut = len(own.path)
        descendants: list[Any] = []
        # Sites and callers (a position among them, -1: `own`): a replay gives the run's flow.
        where = {id(own): -1}
        for call in run.log[start:]:
            if not call.done or not call.path.startswith(own.path + "."):
                return None
            up = where.get(id(call.parent), -1)
            where[id(call)] = len(descendants)
            ins, outs, site = call.input_leaves(), call.output_leaves(), call.where()
            descendants.append((call.path[cut:], ins, outs, call.flops, site, up))
        if run.produced is not None:
            inner = inner_edges(run.produced.raw, first_edge, where)
            if inner is None:
                return None  # a tensor reached the block other than through its inputs
            descendants = [(*d, inner.get(i, ())) for i, d in enumerate(descendants)]
        return _Entry(spec, leaves, descendants, own.flops, index, effects)

    def _replay(
        self, own: Call, entry: _Entry, caches: list[Any], index: int | None, *given: Any
    ) -> Any:
        run = self.run
        made: list[Call] = []
        produced = run.produced
        for rel, inputs, outputs, flops, site, up, *edges in entry.descendants:
            parent = own if up < 0 else made[up]
            call = Call.made(own.path + rel, inputs, outputs, flops, True, site, parent)
            made.append(call)
            run.log.append(call)
            if produced is not None and edges:
                replay_edges(produced, call, edges[0], made, list(given))
        for outer in run.stack:  # own is on the stack: it and its callers get the block's FLOPs
            outer.flops += entry.flops
        if index is not None:
            for cache, (tmpl, _) in zip(caches, entry.effects):
                materialise(cache.layers[index], tmpl)
        self.hits.append(own.path)
        return entry.outputs(fresh=produced is not None)
