"""What a memo (`_fake.memo`) needs to know of a Hugging Face ``Cache`` passed to a block.

transformers' decoder layers are called with a cache object, and each layer writes its keys and
values to the cache's slot ``layers[layer_idx]``, ``layer_idx`` being an attribute of the layer's
attention module. Two such layers are interchangeable when they differ only in that index and the
slot each one writes to starts out the same: the memo then runs the first, checks that it changed
nothing in the cache but its own slot, and replays a skipped layer by giving its slot the state the
first layer's slot ended with (fresh fake tensors of the same metadata): `slot_effects` after the
call that runs, `replay_slots` for a replay.

The cache is recognised by class (``transformers.cache_utils.Cache`` in its MRO), so transformers
is never imported here. Its state is compared through `state_key`, which reads tensors' metadata
only and gives up (None) on anything it cannot compare by value.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Hashable
from typing import Any

import torch

__all__ = [
    "PLAIN",
    "TensorMeta",
    "Unkeyable",
    "is_hf_cache",
    "materialise",
    "only_slot_changed",
    "replay_slots",
    "slot_effects",
    "slot_key",
    "snapshot",
    "state_key",
    "template",
]

# Values compared by value, and left as they are in a memo's records.
PLAIN = (bool, int, float, str, type(None), torch.dtype, torch.device)
_DEPTH = 3
# Classes and functions (a layer class to replicate, say) are equal only to themselves.
_BY_ID = (type, types.FunctionType, types.BuiltinFunctionType)


class Unkeyable(Exception):
    """A value whose state cannot be compared by value (the memo then runs the call)."""


def is_hf_cache(value: Any) -> bool:
    for cls in type(value).__mro__:
        if cls.__name__ == "Cache" and cls.__module__ == "transformers.cache_utils":
            return isinstance(getattr(value, "layers", None), list)
    return False


def _key(value: Any, depth: int) -> Hashable:
    if isinstance(value, PLAIN):
        return (type(value), value)
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.stride(), value.dtype, value.device)
    if isinstance(value, _BY_ID):
        return ("id", id(value))
    if depth <= 0:
        raise Unkeyable
    if type(value) in (list, tuple):
        return (type(value), tuple(_key(v, depth - 1) for v in value))
    if type(value) is dict:
        return ("dict", tuple(sorted((k, _key(v, depth - 1)) for k, v in value.items())))
    raise Unkeyable


def state_key(obj: Any, skip: str = "") -> Hashable | None:
    """Metadata of an object's instance attributes (tensors by shape/stride/dtype/device), or None
    when one of them cannot be compared by value."""
    try:
        items = sorted((k, _key(v, _DEPTH)) for k, v in vars(obj).items() if k != skip)
    except (Unkeyable, TypeError):
        return None
    return (type(obj), tuple(items))


def slot_key(cache: Any, index: int) -> Hashable | None:
    """What a layer of index `index` finds in `cache` and may depend on: the cache's own
    attributes, its number of slots and the state of slot `index`."""
    layers = cache.layers
    if not 0 <= index < len(layers):
        return None
    own = state_key(cache, skip="layers")
    slot = state_key(layers[index])
    if own is None or slot is None:
        return None
    return ("cache", own, len(layers), slot)


def snapshot(cache: Any) -> tuple[Hashable, list[tuple[int, Hashable]]] | None:
    """The whole cache's state, to check afterwards which slots a call changed."""
    own = state_key(cache, skip="layers")
    slots = [(id(layer), state_key(layer)) for layer in cache.layers]
    if own is None or any(k is None for _, k in slots):
        return None
    return own, slots


def only_slot_changed(cache: Any, before: Any, index: int) -> bool:
    """Whether the cache now equals `before` (a `snapshot`) except in slot `index`, which must
    still be the same object."""
    after = snapshot(cache)
    if after is None or after[0] != before[0] or len(after[1]) != len(before[1]):
        return False
    for i, (was, now) in enumerate(zip(before[1], after[1])):
        if was[0] != now[0] or (i != index and was[1] != now[1]):
            return False
    return True


def template(obj: Any) -> dict[str, Any] | None:
    """An object's instance attributes with each tensor replaced by its metadata, for
    `materialise`; None if an attribute is neither a tensor nor a plain value (or a flat list or
    tuple of them)."""
    out: dict[str, Any] = {}
    for k, v in vars(obj).items():
        if isinstance(v, torch.Tensor):
            out[k] = TensorMeta(v)
        elif isinstance(v, PLAIN):
            out[k] = v
        elif type(v) in (list, tuple) and all(isinstance(x, (torch.Tensor, *PLAIN)) for x in v):
            out[k] = type(v)(TensorMeta(x) if isinstance(x, torch.Tensor) else x for x in v)
        else:
            return None
    return out


class TensorMeta:
    """A tensor of a `template`, as `materialise` makes it again: its metadata only."""

    __slots__ = ("shape", "stride", "dtype", "device")

    def __init__(self, t: torch.Tensor) -> None:
        self.shape, self.stride = tuple(t.shape), t.stride()
        self.dtype, self.device = t.dtype, t.device


def materialise(
    obj: Any, tmpl: dict[str, Any], make: Callable[..., torch.Tensor] | None = None
) -> None:
    """Give `obj` the instance attributes `tmpl` describes, each tensor a new one made by `make`
    (shape, stride, dtype, device; by default `torch.empty_strided`, fake under a fake mode)."""
    d = vars(obj)
    d.clear()
    d.update({k: _fresh(v, make or _empty) for k, v in tmpl.items()})


def _empty(shape: Any, stride: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.empty_strided(shape, stride, dtype=dtype, device=device)


def _fresh(v: Any, make: Callable[..., torch.Tensor]) -> Any:
    # A module-level function, not a recursive closure: that would be a reference cycle holding
    # every tensor the replay made until a garbage collection (and a memory trace's live total
    # with them).
    if isinstance(v, TensorMeta):
        return make(v.shape, v.stride, v.dtype, v.device)
    if type(v) in (list, tuple):
        return type(v)(_fresh(x, make) for x in v)
    return v


def slot_effects(
    caches: list[Any],
    before: list[Any],
    index: int | None,
    owned: Callable[[Any], bool] | None = None,
) -> list[tuple[dict[str, Any], Hashable]] | None:
    """Per cache argument, in order, its slot `index` after a call (`template`, `state_key`);
    None when the call changed anything else of a cache (``before``: each one's `snapshot`), when
    a slot cannot be described, or when ``owned(slot)`` says no."""
    effects = []
    for cache, was in zip(caches, before):
        # The block may have changed its own slot (index), and nothing else of the cache.
        if was is None or index is None or not only_slot_changed(cache, was, index):
            return None
        slot = cache.layers[index]
        tmpl, now = template(slot), state_key(slot)
        if tmpl is None or now is None or (owned is not None and not owned(slot)):
            return None
        effects.append((tmpl, now))
    return effects


def replay_slots(
    caches: list[Any],
    effects: list[tuple[dict[str, Any], Hashable]],
    index: int | None,
    make: Callable[..., torch.Tensor] | None = None,
) -> None:
    """Each cache's slot `index` given the state `slot_effects` described (nothing without an
    index)."""
    if index is not None:
        for cache, (tmpl, _) in zip(caches, effects):
            materialise(cache.layers[index], tmpl, make)
