"""Repeated identical blocks of a fake run (80 identical decoder layers), found once and run
once or twice: the half of the memo that the probe's (`_probe.memo`) and the memory trace's
(`_memory.memo`) share. `Signatures` says which blocks are interchangeable, `input_key` which
calls of them are, `stub_targets` which blocks get a stub, and `BlockMemo` decides per call
whether to run it (and remember what it did) or replay it; each client says what it remembers
and how it replays.

Fake tensors carry no data, so a block's outputs, and everything its submodules see, depend only
on the block's structure and its inputs' metadata. Two blocks with the same *signature* (class,
forward, plain attributes, parameter/buffer metadata, children's signatures, no hooks of their
own) called with the same input metadata do the same.

transformers' decoder layers differ in one attribute, ``layer_idx``, and are called with a cache
object they write to at that index (`_fake.memo_cache`). Such blocks share a *relaxed*
signature; a call is keyed on its tensors' metadata and on the state of its own cache slot. The
first block runs and must change nothing in the cache but its own slot; a second block of another
index runs too and must do exactly the same (same records, same slot state after), which catches a
forward that treats one layer apart; then the rest are replayed, each replay giving its slot the
state the first block's slot ended with. What this cannot see is a forward that branches on
``layer_idx`` from the third layer on, or reads another layer's slot; transformers' own models use
``layer_idx`` only as the cache index or a scalar factor, so the relaxation applies to classes
from the ``transformers`` package only, and only when a cache is passed.

Signatures and stub targets are computed in `_fake.signatures`. Skipping a forward needs the call
itself: the outermost modules whose signature occurs more than once get a stub
(`BlockMemo.make_stubs`) that consults the memo.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree
from torch.utils.hooks import RemovableHandle

from .memo_cache import PLAIN, is_hf_cache, slot_key, snapshot
from .signatures import Signatures, stub_targets, tensor_key

__all__ = [
    "REFUSED",
    "BlockCall",
    "BlockMemo",
    "Meta",
    "Signatures",
    "call_out_codes",
    "input_key",
    "meta",
    "stub_targets",
    "tensor_key",
]

REFUSED = object()  # the entry of a key whose calls a replay could not repeat: always run

Meta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]


def meta(t: torch.Tensor) -> Meta:
    """What a replay needs to make a tensor like `t`: shape, stride, dtype, device."""
    return (tuple(t.shape), t.stride(), t.dtype, t.device)


def input_key(
    args: tuple[Any, ...], kwargs: dict[str, Any], index: int | None = None
) -> tuple[Hashable, list[Any]] | None:
    """The metadata a call's outputs may depend on, and the Hugging Face caches among its
    arguments; None when an argument is an object the memo cannot key (it runs the call)."""
    if not kwargs and all(isinstance(a, torch.Tensor) for a in args):
        return tuple(tensor_key(a) for a in args), []
    leaves, spec = pytree.tree_flatten((args, kwargs))
    parts: list[Hashable] = [str(spec)]
    caches: list[Any] = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            parts.append(tensor_key(leaf))
        elif isinstance(leaf, PLAIN):
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


class BlockCall:
    """A stubbed block's call that the memo can key: its arguments, the Hugging Face caches among
    them (`input_key`) and the block's cache index (None for an exact repeat)."""

    __slots__ = ("args", "caches", "index", "kwargs")

    def __init__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], caches: list[Any], index: int | None
    ) -> None:
        self.args, self.kwargs, self.caches, self.index = args, kwargs, caches, index


_RECORDED = (
    "the model's forward turns autograd on around it (a replayed output would join no graph)"
)


def _records(block: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether autograd records ``block``'s call: one of its tensor arguments or weights
    requires a gradient (grad mode is on)."""
    leaves = pytree.tree_leaves((args, kwargs))
    if any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves):
        return True
    return any(p.requires_grad for p in block.parameters())


class BlockMemo:
    """One memo per fake run, keyed by (signature, input key). Its stubs' calls go through
    `_call`, which runs a block whose key it has no usable entry for (remembering what it did:
    `begin`, `end`, `failed`) and replays one it has (`replay`); a subclass gives those four and
    `here`. Entries have ``index`` (the cache index of the block that ran, or None), ``confirmed``
    and ``same(other)``; an unconfirmed entry is confirmed by a second call of another index that
    did the same, and refused (`REFUSED`) by one that did not."""

    # A call that could not be remembered is tried again at the next call of its key (else its
    # key is refused at once).
    retry_unremembered = True
    # An unconfirmed entry is replayed for the very index it was remembered from (the same layer
    # called again); else only a confirmed entry is.
    replay_same_index = True

    def __init__(
        self,
        model: nn.Module,
        paths: dict[int, str],
        modules: list[nn.Module] | None = None,
        unshared: bool = False,
    ) -> None:
        self.sigs = Signatures(model, paths, modules, unshared)
        self.entries: dict[Hashable, Any] = {}
        self.hits: list[str] = []  # the paths of the replayed calls, in order
        # Why calls of a stubbed signature ran anyway, the first reason per signature key
        # (`_fake.unreplayed` says it in the report); `unremembered` is set by `end` returning None.
        self.refusals: dict[Hashable, str] = {}
        self.unremembered = ""
        # id(module) -> (signature key, cache index or None) for each stubbed module
        self.stubbed = stub_targets(self.sigs, model)
        # Hooks registered during the run (a library's first-call setup) on a stubbed block or
        # inside it: such a block runs, so that they run. `_rehook` reads them again whenever a
        # hook was registered (the handle counter moved).
        self._blocks: dict[int, nn.Module] = {}
        self._handles = RemovableHandle.next_id
        self._hooked: set[int] = set()

    def make_stubs(
        self, named: Iterable[tuple[str, nn.Module]]
    ) -> list[tuple[str, nn.Module, Callable[..., Any]]]:
        """(path, module, stub) for each stubbed module among `named`: the stub consults the memo
        and otherwise calls the module's own forward (read now, before anything patches it)."""
        out = []
        for path, m in named:
            stubbed = self.stubbed.get(id(m))
            if stubbed is not None:
                sig, index = stubbed
                self._blocks[id(m)] = m
                out.append((path, m, self._stub(path, sig, index, m.forward, id(m))))
        return out

    def _stub(
        self,
        path: str,
        sig: Hashable,
        index: int | None,
        original: Callable[..., Any],
        key: int,
    ) -> Callable[..., Any]:
        def forward(*args: Any, **kwargs: Any) -> Any:
            if RemovableHandle.next_id != self._handles:
                self._rehook()
            if key in self._hooked:
                self.refusals.setdefault(sig, "the forward registered hooks in it (hooks must run)")
                return original(*args, **kwargs)
            if torch.is_grad_enabled() and _records(self._blocks[key], args, kwargs):
                # A forward that turns autograd on inside (``with torch.enable_grad():``, an
                # energy model's sampler differentiating through its blocks): a replayed output
                # is a new tensor that no graph joins to the block's inputs and weights.
                self.refusals.setdefault(sig, _RECORDED)
                return original(*args, **kwargs)
            return self._call(path, sig, index, original, args, kwargs)

        return forward

    def _rehook(self) -> None:
        self._handles = RemovableHandle.next_id
        every = global_hooks()  # module hooks for every module, registered during the run
        self._hooked = {
            k for k, m in self._blocks.items() if every or any(_hooked(x) for x in m.modules())
        }

    def _call(
        self,
        path: str,
        sig: Hashable,
        index: int | None,
        original: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        # The forward is called here, not in a helper: `_probe.failure` knows this frame as one
        # that calls out to the model.
        here = self.here(path)
        keyed = input_key(args, kwargs, index)
        if here is None or keyed is None:
            if keyed is None and sig not in self.refusals:
                self.refusals[sig] = _unkeyable(args, kwargs, index)
            return original(*args, **kwargs)
        ikey, caches = keyed
        key = (sig, ikey)
        entry = self.entries.get(key)
        if entry is REFUSED:
            return original(*args, **kwargs)
        call = BlockCall(args, kwargs, caches, index)
        if entry is not None and (
            entry.confirmed or (self.replay_same_index and entry.index == index)
        ):
            out = self.replay(here, entry, call)
            self.hits.append(path)
            return out
        before = [snapshot(c) for c in caches]
        token = self.begin(here, call)
        self.unremembered = ""
        try:
            result = original(*args, **kwargs)
        except BaseException:
            self.failed(token)
            raise
        fresh = self.end(here, token, result, call, before)
        if fresh is None:
            self.refusals.setdefault(
                sig, self.unremembered or "what its call did could not be kept"
            )
        if entry is None:
            if fresh is not None:
                self.entries[key] = fresh
            elif not self.retry_unremembered:
                self.entries[key] = REFUSED
        elif index is not None and entry.index == index:
            pass  # the same layer again: a second index must confirm
        elif fresh is not None and entry.same(fresh):
            entry.confirmed = True  # a second index did the same: replay the rest
        else:
            self.entries[key] = REFUSED
            self.refusals.setdefault(
                sig, f"the block of cache index {index} did not do what index {entry.index} did"
            )
        return result

    # -- what a client gives ------------------------------------------------------------------
    def here(self, path: str) -> Any:
        """What the client knows of the call of `path` now in progress (passed to the methods
        below), or None when the memo must stay out of it (the call just runs)."""
        raise NotImplementedError

    def begin(self, here: Any, call: BlockCall) -> Any:
        """Before a remembered call runs: what `end` or `failed` needs of the time before."""
        raise NotImplementedError

    def end(self, here: Any, token: Any, result: Any, call: BlockCall, before: list[Any]) -> Any:
        """The entry for what the call just did (``before``: each cache's `snapshot`), or None
        where a replay could not repeat it."""
        raise NotImplementedError

    def failed(self, token: Any) -> None:
        """The call raised: undo what `begin` set up (the exception then goes on)."""

    def replay(self, here: Any, entry: Any, call: BlockCall) -> Any:
        """The call's outputs from `entry`, with its effects on the run, without running it."""
        raise NotImplementedError


def global_hooks() -> bool:
    return bool(
        nn_module._global_forward_hooks
        or nn_module._global_forward_pre_hooks
        or nn_module._global_backward_hooks
        or nn_module._global_backward_pre_hooks
    )


def _hooked(m: nn.Module) -> bool:
    return bool(
        m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks
    )


def _unkeyable(args: tuple[Any, ...], kwargs: dict[str, Any], index: int | None) -> str:
    """Why `input_key` gave up on a call: the first argument it cannot compare."""
    for leaf in pytree.tree_leaves((args, kwargs)):
        if not isinstance(leaf, (torch.Tensor, *PLAIN)) and not is_hf_cache(leaf):
            return f"its call passes a {type(leaf).__qualname__}, which cannot be compared by value"
    return f"the cache it is passed has no comparable slot {index}"


def call_out_codes() -> tuple[types.CodeType, ...]:
    """The code of the memo's frames that call a block's own forward (a stub's and
    `BlockMemo._call`'s): an exception a C function raises there (an argument mismatch) belongs
    to the model, not to torchxray (`_probe.failure`)."""
    stub = next(
        c
        for c in BlockMemo._stub.__code__.co_consts
        if isinstance(c, types.CodeType) and c.co_name == "forward"
    )
    return stub, BlockMemo._call.__code__
