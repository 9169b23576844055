"""Memoising repeated identical blocks in a fake probe (80 identical decoder layers run once).

Fake tensors carry no data, so a block's outputs, and everything its submodules see, depend only
on the block's structure and its inputs' metadata. Two blocks with the same *signature* (class,
forward, plain attributes, parameter/buffer metadata, children's signatures, no hooks of their own)
called with the same input metadata give the same records. The first such call runs; later ones
return fresh fake tensors of the remembered shapes and copy the remembered records under their own
path. `tests/test_probe.py` checks that this equals a full probe.

Skipping a forward needs the call itself: the outermost modules whose signature occurs more than
once get, inside the probe's recording (`_probe.wrap`), a stub that consults the memo.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .calls import Call, Recorder

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


def signatures(model: nn.Module, paths: dict[int, str]) -> dict[int, int]:
    """id(module) -> small int, equal for interchangeable blocks; ineligible modules are absent."""
    interned: dict[Hashable, int] = {}
    out: dict[int, int] = {}
    seen: set[int] = set()

    def visit(m: nn.Module, path: str) -> int | None:
        if id(m) in seen:  # shared object: its records live at its first path only
            return out.get(id(m)) if paths.get(id(m)) == path else None
        seen.add(id(m))
        ok = not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)
        ok = ok and not getattr(m, "_backward_pre_hooks", None)
        kids: list[tuple[str, int | None]] = []
        for name, child in m._modules.items():
            if child is None:
                kids.append((name, None))
                continue
            sub = visit(child, f"{path}.{name}" if path else name)
            ok = ok and sub is not None
            kids.append((name, sub))
        if not ok:
            return None
        # The few non-internal attributes found by a set difference (a C loop over ~20 keys),
        # sorted so that the key does not depend on the order they were set in.
        d = vars(m)
        attrs = tuple(sorted((k, _attr_key(d[k])) for k in d.keys() - _MODULE_INTERNALS))
        params = tuple((k, _tensor_key(p)) for k, p in m._parameters.items())
        buffers = tuple((k, _tensor_key(b)) for k, b in m._buffers.items())
        forward = m.__dict__.get("forward", _MISSING)
        key = (type(m), id(forward), attrs, params, buffers, tuple(kids))
        sig = interned.setdefault(key, len(interned))
        out[id(m)] = sig
        return sig

    visit(model, "")
    return out


def _input_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Hashable | None:
    if not kwargs and all(isinstance(a, torch.Tensor) for a in args):
        return tuple(_tensor_key(a) for a in args)
    leaves, spec = pytree.tree_flatten((args, kwargs))
    parts: list[Hashable] = [str(spec)]
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            parts.append(_tensor_key(leaf))
        elif isinstance(leaf, _PLAIN):
            parts.append((type(leaf), leaf))
        else:
            return None  # an arbitrary object might steer the forward: run it every time
    return tuple(parts)


_Meta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]


def _meta(t: torch.Tensor) -> _Meta:
    return (tuple(t.shape), t.stride(), t.dtype, t.device)


class _Entry:
    __slots__ = ("spec", "leaves", "metas", "descendants", "flops")

    def __init__(self, spec: Any, leaves: list[Any], descendants: list[Any], flops: int) -> None:
        self.spec = spec
        self.leaves = leaves
        self.metas = [_meta(t) if isinstance(t, torch.Tensor) else None for t in leaves]
        self.descendants = descendants
        self.flops = flops

    def outputs(self) -> Any:
        # The first call's own output tensors are handed out again: they are fake (no data to
        # get wrong) and making new ones costs a fake dispatch each. Only if a caller changed one
        # in place (unsqueeze_, resize_) is a fresh tensor of the recorded metadata made.
        for i, meta in enumerate(self.metas):
            leaf = self.leaves[i]
            if meta is not None and _meta(leaf) != meta:
                shape, stride, dtype, device = meta
                self.leaves[i] = torch.empty_strided(shape, stride, dtype=dtype, device=device)
        return pytree.tree_unflatten(self.leaves, self.spec)


class Memo:
    """Made by a fake ProbeRun, which records each of `stubs()` around its stub. It reads the
    run's modules (pre-order, ``paths`` by id) and the recorder's open calls and log."""

    def __init__(
        self, model: nn.Module, modules: list[nn.Module], paths: dict[int, str], recorder: Recorder
    ) -> None:
        self.modules, self.paths, self.run = modules, paths, recorder
        self.sigs = signatures(model, paths)
        self.entries: dict[Hashable, _Entry] = {}
        self.hits: list[str] = []
        self.stubbed: set[int] = set()
        self._mark(model, Counter(self.sigs.values()), parent_repeats=False)

    def _mark(self, m: nn.Module, counts: Counter[int], parent_repeats: bool) -> None:
        # Only the outermost repeated modules get a stub: inside a repeated block the first
        # instance runs its children anyway, and fewer stubs keep set-up and calls cheap.
        sig = self.sigs.get(id(m))
        repeats = sig is not None and counts[sig] > 1
        if repeats and not parent_repeats:
            self.stubbed.add(id(m))
        for child in m._modules.values():
            if child is not None:
                self._mark(child, counts, repeats)

    def stubs(self) -> list[tuple[nn.Module, Callable[..., Any]]]:
        """(module, stub) for each outermost repeated block: the stub consults the memo and
        otherwise calls the module's own forward (read now, before the probe patches anything)."""
        out = []
        for m in self.modules:
            if id(m) in self.stubbed:
                out.append((m, self._stub(self.sigs[id(m)], self.paths[id(m)], m.forward)))
        return out

    def _stub(self, sig: int, path: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def forward(*args: Any, **kwargs: Any) -> Any:
            return self._call(path, sig, original, args, kwargs)

        return forward

    def _call(
        self,
        path: str,
        sig: int,
        original: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        run = self.run
        own = run.stack[-1] if run.stack else None
        ikey = _input_key(args, kwargs)
        if own is None or own.path != path or ikey is None:
            return original(*args, **kwargs)
        key = (sig, ikey)
        entry = self.entries.get(key)
        if entry is not None:
            return self._replay(own, entry)
        start = len(run.log)
        result = original(*args, **kwargs)
        leaves, spec = pytree.tree_flatten(result)
        if not all(isinstance(leaf, (torch.Tensor, *_PLAIN)) for leaf in leaves):
            return result  # an arbitrary object may be mutable or stateful: no entry
        cut = len(own.path)
        descendants = []
        for call in run.log[start:]:
            if not call.done or not call.path.startswith(own.path + "."):
                return result
            descendants.append(
                (call.path[cut:], call.input_leaves(), call.output_leaves(), call.flops)
            )
        self.entries[key] = _Entry(spec, leaves, descendants, own.flops)
        return result

    def _replay(self, own: Call, entry: _Entry) -> Any:
        run = self.run
        for rel, inputs, outputs, flops in entry.descendants:
            run.log.append(Call.made(own.path + rel, inputs, outputs, flops))
        for outer in run.stack:  # own is on the stack: it and its callers get the block's FLOPs
            outer.flops += entry.flops
        self.hits.append(own.path)
        return entry.outputs()
