"""A cheaper front for FakeTensorMode's own per-op result cache, and a cheaper FakeTensor.

FakeTensorMode already caches an op's output metadata by the op and its inputs' metadata, so an
op it has seen runs no meta kernel. What it spends per op instead is the key: a walk over the
arguments that flattens every tensor's full metadata (a dataclass of 17 fields, each field's type
checked), and the output: a meta tensor made under its kernel-invocation context and wrapped by a
FakeTensor constructor that parses its arguments. On a small model that was most of a fake probe
(bench/README.md, "The fake probe's fixed cost").

`Quick` keys the same entries more cheaply: per tensor argument the fields torch's key holds for
a dense strided tensor of this mode without a constant (dtype, sizes, strides, storage offset and
bytes, device, requires_grad, conj/neg/inference bits), per other argument its type and value,
plus the global state torch's key reads (default dtype and device, inference mode). On a miss the
op goes to FakeTensorMode exactly as before, with torch's own key computed first, and what torch's
cache then holds for that key is remembered under the cheap one: a valid entry is replayed from
then on, a bypass (an op torch will not cache) goes straight to FakeTensorMode every time.
Anything the cheap key does not describe (a real tensor, a symbolic size, another mode's fake, a
sparse or mkldnn tensor, a constant, an unhashable argument) goes straight to FakeTensorMode too.
A replay makes the outputs as torch's ``_output_from_cache_entry`` does: the in-place argument
itself, or a new meta tensor of the entry's metadata (on the input's storage for a view op),
wrapped in a FakeTensor by `wrap`.

`wrap` makes the FakeTensor that ``FakeTensor(mode, elem, device)`` makes (the same subclass
construction, the same attributes, copied from one made the usual way), checked once per mode
against the constructor itself; where they differ (another torch release, fake-tensor debugging)
the constructor is used. Torch's private names used here are looked up when the module loads;
without them `Quick` is off and every op goes to FakeTensorMode as before.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["MODES", "Quick", "wrap"]

try:
    from torch._subclasses import fake_tensor as _ft

    _ENTRY = _ft._DispatchCacheValidEntry
    _STATE = _ft._CacheKeyState
    _BYPASS_ERROR = _ft._BypassDispatchCache
    # By id: an OpOverload's __hash__ is Python code, run at every lookup otherwise.
    _SPECIAL = frozenset(map(id, (*_ft._DISPATCH_META_HANDLERS, *_ft._DISPATCH_HANDLE_DIRECTLY)))
    _FakeTensor: Any = _ft.FakeTensor
    _CACHE = _ft.FakeTensorMode.cache
    _AVAILABLE = all(hasattr(_ft.FakeTensorMode, n) for n in ("_cache_key", "dispatch"))
except (ImportError, AttributeError):  # another torch release: no quick path
    _AVAILABLE = False

# The C property, not FakeTensor's Python one.
_LAYOUT = torch._C.TensorBase.layout.__get__  # type: ignore[attr-defined]
_STRIDED = torch.strided
_SIZE = torch.Size
_PLAIN = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device,
                    torch.memory_format, torch.layout})  # fmt: skip
# The dispatch keys through which Python dispatch modes run: a meta tensor made with them
# excluded is seen by no mode.
MODES = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(
    torch._C.DispatchKey.PythonTLSSnapshot
)
_UNINDEXED = frozenset({"cpu", "meta"})  # device types FakeTensor keeps without an index
_SKIP = object()  # this key's calls always go to FakeTensorMode
_EMPTY_CONSTANT = object()  # in a key: the next tensor is a constant without elements
_UNSAFE_VIEW = torch.ops.aten._unsafe_view.default
_LIFTS = frozenset({torch.ops.aten.lift_fresh.default, torch.ops.aten.lift_fresh_copy.default})
_LIMIT = 65_536  # entries kept across probes (metadata only); past it the table starts again
_make_subclass = torch.Tensor._make_subclass
_empty_strided = torch.empty_strided


class Quick:
    """One fake mode's front; the table is shared by every mode (as torch's cache is)."""

    table: dict[tuple[Any, ...], Any] = {}

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self.on = (
            _AVAILABLE
            and getattr(mode, "cache_enabled", False)
            and mode.shape_env is None
            and not getattr(mode, "cache_crosscheck_enabled", False)
        )

    def dispatch(self, func: Any, types: Any, args: Any, kwargs: Any, slow: Any) -> Any:
        """The op's output: replayed from the table, or from `slow` (FakeTensorMode's dispatch)
        and learnt."""
        if not self.on or id(func) in _SPECIAL:
            return slow(func, types, args, kwargs)
        key = _key(func, args, kwargs, self.mode)
        if key is None:
            return slow(func, types, args, kwargs)
        table = self.table
        held = table.get(key)
        if held is not None and held[0] is func:  # keyed by id(func): the op itself checked
            recipe = held[1]
            if recipe is _SKIP:
                return slow(func, types, args, kwargs)
            return _replay(recipe, args, self.mode)
        mode = self.mode
        try:
            torch_key = mode._cache_key(_STATE(mode.shape_env), func, args, kwargs or {})
        except _BYPASS_ERROR:
            torch_key = None
        out = slow(func, types, args, kwargs)
        found = _CACHE.get(torch_key) if torch_key is not None else None
        if len(table) >= _LIMIT:
            table.clear()
        if isinstance(found, _ENTRY):
            recipe = _recipe(found, func)
        elif (func is _UNSAFE_VIEW or _EMPTY_CONSTANT in key) and _observable(func):
            recipe = _observed(out, args, mode)
        else:
            recipe = _SKIP
        table[key] = (func, recipe)
        return out


def _key(func: Any, args: Any, kwargs: Any, mode: Any) -> tuple[Any, ...] | None:
    """The cheap key of this call, or None where it does not describe the call."""
    parts: list[Any] = [
        id(func),
        torch.get_default_dtype(),
        torch._C._get_default_device(),
        torch.is_inference_mode_enabled(),
        len(args),
    ]
    add = parts.append
    for a in args:
        if not _part(a, mode, add):
            return None
    if kwargs:
        for k, v in kwargs.items():
            add(k)
            if not _part(v, mode, add):
                return None
    return tuple(parts)


def _part(a: Any, mode: Any, add: Any) -> bool:
    """Append what torch's key holds of argument `a`; False where the cheap key cannot."""
    kind = type(a)
    if kind is _FakeTensor:
        if a.constant is not None:
            # A constant's value may steer the op (torch propagates constants): only an empty
            # one, whose value its metadata says, is keyed (marked, see `_observed`).
            if a.constant.numel() != 0:
                return False
            add(_EMPTY_CONSTANT)
        if (
            a.fake_mode is not mode
            or a.dispatch_keys is not None
            or _LAYOUT(a) is not _STRIDED
            or a._has_symbolic_sizes_strides
        ):
            return False
        add(
            (
                a.dtype,
                tuple(a.shape),
                a.stride(),
                a.storage_offset(),
                a.untyped_storage().nbytes(),
                a._fake_device,
                a.requires_grad,
                a.is_conj(),
                a.is_neg(),
                a.is_inference(),
            )
        )
        return True
    if kind in _PLAIN:
        add(kind)
        add(a)
        return True
    if kind is list or kind is tuple or kind is _SIZE:
        add(kind)
        add(len(a))
        return all(_part(x, mode, add) for x in a)
    return False  # a real tensor, a SymInt, a function, ...: FakeTensorMode's own path


def _recipe(entry: Any, func: Any) -> Any:
    """What a replay of torch's cache entry does, per output: ("arg", i) returns argument i (an
    in-place op), ("value", v) a constant, ("new", ...) a new tensor; or _SKIP where a replay
    here would differ from torch's own (sparse, quantized or symbolic metadata)."""
    outs: list[tuple[Any, ...]] = []
    view = isinstance(func, torch._ops.OpOverload) and func.is_view
    for info in entry.output_infos:
        if info.inplace_idx is not None:
            outs.append(("arg", info.inplace_idx))
            continue
        meta = info.metadata
        if meta is None:
            if info.view_idx is not None:
                return _SKIP
            outs.append(("value", info.constant_value))
            continue
        if meta.layout is not _STRIDED or meta.is_quantized or meta.is_sparse:
            return _SKIP
        numbers = (*meta.shape, *meta.stride, meta.storage_offset)
        if not all(type(v) is int for v in numbers):
            return _SKIP
        shape, stride = tuple(meta.shape), tuple(meta.stride)
        view_idx = info.view_idx if view else None
        if view and view_idx is None:
            return _SKIP
        outs.append(
            ("new", shape, stride, meta.dtype, meta.requires_grad, meta.is_conj, meta.is_neg,
             view_idx, meta.storage_offset, meta.device)
        )  # fmt: skip
    return (entry.is_output_tuple, tuple(outs))


def _observable(func: Any) -> bool:
    """Whether an op torch does not cache may be learnt from what it returned: a functional
    builtin op whose outputs' metadata follows from its inputs' (no data-dependent or dynamic
    shape, no mutation, no lift, not a decomposed view)."""
    if not isinstance(func, torch._ops.OpOverload) or func._schema.is_mutable:
        return False
    tags = set(func.tags)
    if tags & {torch.Tag.data_dependent_output, torch.Tag.dynamic_output_shape,
               torch.Tag.inplace_view}:  # fmt: skip
        return False
    if func in _LIFTS or not torch._library.utils.is_builtin(func):
        return False
    return not (
        func.is_view
        and torch._C._dispatch_has_kernel_for_dispatch_key(
            func.name(), torch._C.DispatchKey.CompositeImplicitAutograd
        )
    )


def _observed(out: Any, args: Any, mode: Any) -> Any:
    """The recipe of what an op returned (`_recipe`'s form), found by looking at its outputs:
    an input returned as it is, a tensor on an input's storage (``_unsafe_view``), or a new
    tensor on a storage of its own; _SKIP for anything else (a constant, a tuple of other
    things, a tensor sharing a storage it could have got from more than one input)."""
    is_tuple = type(out) is tuple
    inputs = [(i, a) for i, a in enumerate(args) if type(a) is _FakeTensor]
    recipe: list[tuple[Any, ...]] = []
    for o in out if is_tuple else (out,):
        if (
            type(o) is not _FakeTensor
            or o.fake_mode is not mode
            or o.constant is not None
            or o.dispatch_keys is not None
            or _LAYOUT(o) is not _STRIDED
            or o.is_quantized
        ):
            return _SKIP
        same = [i for i, a in inputs if a is o]
        if same:
            recipe.append(("arg", same[0]))
            continue
        storage = o.untyped_storage()
        on = [i for i, a in inputs if a.untyped_storage()._cdata == storage._cdata]
        if len(on) > 1:
            return _SKIP
        shape, stride = tuple(o.shape), o.stride()
        if not on:
            span = 0 if o.numel() == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
            if o.storage_offset() != 0 or span * o.element_size() != storage.nbytes():
                return _SKIP
        recipe.append(
            ("new", shape, stride, o.dtype, o.requires_grad, o.is_conj(), o.is_neg(),
             on[0] if on else None, o.storage_offset(), o._fake_device)
        )  # fmt: skip
    return (is_tuple, tuple(recipe))


def _replay(recipe: Any, args: Any, mode: Any) -> Any:
    is_tuple, outs = recipe
    made = []
    for out in outs:
        kind = out[0]
        if kind == "arg":
            made.append(args[out[1]])
        elif kind == "value":
            made.append(out[1])
        else:
            _, shape, stride, dtype, grad, conj, neg, view_idx, offset, device = out
            with torch._C._ExcludeDispatchKeyGuard(MODES):
                elem = _empty_strided(shape, stride, dtype=dtype, device="meta")
                if grad:
                    elem.requires_grad_(True)
                if conj:
                    torch._C._set_conj(elem, True)
                if neg:
                    torch._C._set_neg(elem, True)
                if view_idx is not None:
                    elem.set_(args[view_idx].untyped_storage(), offset, shape, stride)
            made.append(wrap(mode, elem, device))
    return tuple(made) if is_tuple else made[0]


# Per mode (by id, with the mode itself to check): the attributes a FakeTensor of it starts with,
# or None where `wrap` must call the constructor.
_TEMPLATES: dict[int, tuple[Any, dict[str, Any] | None]] = {}


def wrap(mode: Any, elem: torch.Tensor, device: torch.device) -> Any:
    """``FakeTensor(mode, elem, device)`` for a meta `elem` and a normalised `device` (one read
    from a FakeTensor), made without the constructor's argument parsing."""
    seen = _TEMPLATES.get(id(mode))
    if seen is None or seen[0] is not mode:
        seen = _TEMPLATES[id(mode)] = (mode, _template(mode, elem, device))
        if len(_TEMPLATES) > 64:  # modes come and go with probes: keep the last ones
            for k in list(_TEMPLATES)[:32]:
                del _TEMPLATES[k]
    attrs = seen[1]
    if attrs is None or (device.index is None and device.type not in _UNINDEXED):
        return _FakeTensor(mode, elem, device)  # it also gives "cuda" its index
    t = _make_subclass(
        _FakeTensor, elem, elem.requires_grad, dispatch_device=True, device_for_backend_keys=device
    )
    if mode._allow_unsafe_data_ptr_access:
        torch._C._set_warn_deprecated_on_mutable_data_ptr(t)
    else:
        torch._C._set_throw_on_mutable_data_ptr(t)
    d = t.__dict__
    d.update(attrs)
    d["_fake_device"] = device
    return t


def _template(mode: Any, elem: torch.Tensor, device: torch.device) -> dict[str, Any] | None:
    """The attributes of a FakeTensor of `mode` as its constructor sets them, if a FakeTensor
    made by `wrap` with them equals one made by the constructor (else None)."""
    try:
        if _ft.FakeTensorConfig.debug:
            return None
        with torch._C._ExcludeDispatchKeyGuard(MODES):
            probe = torch.empty_strided(elem.shape, elem.stride(), dtype=elem.dtype, device="meta")
        ref = _FakeTensor(mode, probe, device)
        attrs = {k: v for k, v in vars(ref).items() if k != "_fake_device"}
        _TEMPLATES[id(mode)] = (mode, attrs)
        with torch._C._ExcludeDispatchKeyGuard(MODES):
            again = torch.empty_strided(elem.shape, elem.stride(), dtype=elem.dtype, device="meta")
        mine = wrap(mode, again, device)
        same = (
            vars(mine) == vars(ref)
            and torch._C._dispatch_keys(mine) == torch._C._dispatch_keys(ref)
            and mine.device == ref.device
            and type(mine) is type(ref)
        )
        return attrs if same else None
    except Exception:  # noqa: BLE001 - any doubt: the constructor
        return None
