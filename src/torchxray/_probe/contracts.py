"""Annotation contracts: a forward's annotations checked against what the probe saw.

Only what can be checked without guessing: ``Tensor``, ``tuple``, ``list``, ``dict``, a plain
class, ``Optional``/``Union`` of those, and jaxtyping array annotations (``Float[Tensor, "b c h
w"]``: dtype, rank, fixed sizes, and each named dimension bound to one size across a call's
inputs and output). Anything else (a TypeVar, a Protocol, ``Unpack[...]``, a string that does not
resolve) is not checked: no annotation, no noise. Checked once per call, on the values the forward
received and returned; a violation is a message, never an exception.
"""

from __future__ import annotations

import inspect
import itertools
import types
import typing
from collections.abc import Callable
from typing import Any

import torch

from .._signature import original, resolve

_Check = Callable[[Any, dict[str, int], str], list[str]]
_MISSING = object()


def _jax_check(ann: Any) -> _Check | None:
    dims = getattr(ann, "dims", None)
    if dims is None or getattr(ann, "array_type", None) is not torch.Tensor:
        return None
    dtypes = tuple(getattr(ann, "dtypes", ()) or ())
    spec = getattr(ann, "dim_str", "")

    def check(value: Any, bound: dict[str, int], where: str) -> list[str]:
        if not isinstance(value, torch.Tensor):
            return [f"{where}: forward says a tensor '{spec}', got {type(value).__name__}"]
        out = []
        dtype = str(value.dtype).removeprefix("torch.")
        if dtypes and dtype not in dtypes:
            out.append(f"{where}: forward says dtype {ann.__name__.split('[')[0]}, got {dtype}")
        shape = tuple(value.shape)
        kinds = [type(d).__name__ for d in dims]
        variadic = any("Variadic" in k for k in kinds)
        fixed_rank = len(dims) - (1 if variadic else 0)
        if (len(shape) != fixed_rank) if not variadic else (len(shape) < fixed_rank):
            return [*out, f"{where}: forward says '{spec}' but got {len(shape)} dims {shape}"]
        # Dimensions before the variadic one match from the left, those after from the right.
        cut = next((i for i, k in enumerate(kinds) if "Variadic" in k), len(dims))
        pairs = list(zip(dims[:cut], shape[:cut]))
        if cut < len(dims):
            tail = dims[cut + 1 :]
            pairs += list(zip(tail, shape[len(shape) - len(tail) :]))
        for dim, size in pairs:
            fixed = getattr(dim, "size", None)
            name = getattr(dim, "name", None)
            if isinstance(fixed, int) and size != fixed:
                out.append(f"{where}: forward says '{spec}' (size {fixed}) but got {shape}")
            elif isinstance(name, str) and not (getattr(dim, "broadcastable", False) and size == 1):
                was = bound.setdefault(name, size)
                if was != size:
                    out.append(f"{where}: '{name}' is {was} elsewhere in this call but {size} here")
        return out

    return check


def _type_check(ann: Any) -> _Check | None:
    """A check for a plain annotation, or None where it is not one this module checks."""
    if ann is None or ann is type(None):
        return lambda v, b, w: [] if v is None else [f"{w}: forward says None, got {_kind(v)}"]
    jax = _jax_check(ann)
    if jax is not None:
        return jax
    origin = typing.get_origin(ann)
    if origin in (typing.Union, types.UnionType):
        options = [_type_check(a) for a in typing.get_args(ann)]
        if any(o is None for o in options):
            return None
        checks = [o for o in options if o is not None]

        def union(v: Any, bound: dict[str, int], where: str) -> list[str]:
            results = [c(v, dict(bound), where) for c in checks]
            ok = next((r for r in results if not r), None)
            if ok is not None:
                for c in checks:  # bind the dimensions of the option that fits
                    if not c(v, bound, where):
                        break
                return []
            return results[0] if len(results) == 1 else [f"{where}: {_kind(v)} fits none of {ann}"]

        return union
    cls = origin if origin is not None else ann
    if cls in (tuple, list, dict) or (isinstance(cls, type) and not typing.get_args(ann)):
        if not isinstance(cls, type) or cls is typing.Any or getattr(cls, "_is_protocol", False):
            return None

        def plain(v: Any, bound: dict[str, int], where: str) -> list[str]:
            if isinstance(v, cls):
                return []
            return [f"{where}: forward says {cls.__name__}, got {_kind(v)}"]

        return plain
    return None


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"Tensor{list(value.shape)}"
    return type(value).__name__


class Contract:
    """The checkable annotations of one forward: per parameter name, and for the return value."""

    def __init__(self, forward: Any, params: dict[str, _Check], ret: _Check | None) -> None:
        self.signature = sig = resolve(forward)  # through wrappers (`torchxray._signature`)
        self.params, self.ret = params, ret
        # A call with positional arguments only binds them in order, as `Signature.bind` would,
        # where the forward's leading parameters take them and nothing else is required: bind
        # itself costs ~10 us, run at every module call of a probe (most forwards: ``(self, x)``).
        lead = list(
            itertools.takewhile(
                lambda p: p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD),
                sig.parameters.values(),
            )
        )
        required_keywords = any(
            p.kind is p.KEYWORD_ONLY and p.default is p.empty for p in sig.parameters.values()
        )
        self._lead = None if required_keywords else tuple(p.name for p in lead)
        self._least = sum(1 for p in lead if p.default is p.empty)

    def _bound(
        self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        """The call's arguments by parameter name (as ``bind(...).arguments``), or None where
        the forward could not take them."""
        lead = self._lead
        if not kwargs and lead is not None and self._least <= len(args) + 1 <= len(lead):
            return dict(zip(lead, (module, *args)))
        try:
            return self.signature.bind(module, *args, **kwargs).arguments
        except TypeError:
            return None

    def check(
        self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any
    ) -> tuple[str, ...]:
        bound_args = self._bound(module, args, kwargs)
        if bound_args is None:
            return ()
        dims: dict[str, int] = {}
        found: list[str] = []
        for name, check in self.params.items():
            value = bound_args.get(name, _MISSING)
            # None for an argument annotated without Optional is common and harmless (transformers
            # passes ``interpolate_pos_encoding=None`` to a ``bool``): not reported.
            if value is not _MISSING and value is not None:
                found += check(value, dims, f"argument {name!r}")
        if self.ret is not None:
            found += self.ret(out, dims, "return value")
        return tuple(found)


_CACHE: dict[Any, Contract | None] = {}


def contract_of(cls: type) -> Contract | None:
    """The `Contract` of `cls.forward`, or None when it has nothing this module checks (cached)."""
    forward = getattr(cls, "forward", None)
    key = forward
    if key in _CACHE:
        return _CACHE[key]
    made = None
    # A decorator without functools.wraps keeps no annotations: read the function it wraps.
    inner = original(forward)
    raw = getattr(inner, "__annotations__", None)
    if inspect.isfunction(inner) and raw:
        try:
            hints = typing.get_type_hints(inner, include_extras=True)
            sig = resolve(forward)
        except Exception:  # an annotation's name not importable here, or no signature: none
            hints, sig = {}, inspect.Signature()
        params = {}
        for name, p in sig.parameters.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name not in hints:
                continue
            check = _type_check(hints[name])
            if check is not None:
                params[name] = check
        ret = _type_check(hints["return"]) if "return" in hints else None
        if params or ret is not None:
            made = Contract(forward, params, ret)
    _CACHE[key] = made
    return made
