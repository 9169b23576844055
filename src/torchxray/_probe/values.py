"""What a probe remembers of the values a module received and returned: metadata, never data.

Tensors become `TensorInfo` (shape, dtype, device, where the tensor sat); other leaves become short
text. Containers are flattened with ``torch.utils._pytree`` (dataclasses too). Where a tensor sat
reads as Python would reach it: inputs as "args[0]" and "kwargs['mask']", outputs from the returned
value on, with string keys as attributes: "logits", "hidden_states[1]" for a transformers
``ModelOutput``, "[0]" for a tuple. A transformers cache in an output (``past_key_values``) is
opened into its tensors, "past_key_values[0].keys", ...; in inputs it stays "<DynamicCache>",
since a layer's cache argument holds every earlier layer's tensors too. Any other object that
pytree does not open (not a module, not a type) is read by its public attributes that hold tensors,
to a bounded depth: torchvision's ``ImageList`` returned reads "tensors", passed on "args[0].tensors";
an object holding no tensor stays one text leaf, "<ImageList>".

On the common case (one tensor in, one tensor out) the recording function (`_probe.calls`) keeps
the raw ``(shape, dtype, device)`` triple, which holds no tensor, and `meta_info` turns it into a
TensorInfo only when a report is read. `tests/test_probe_fast.py` checks that this gives the
same report as converting everything with `leaf_infos` at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from .._text import short
from .records import TensorInfo

_SUMMARY_CHARS = 40

Meta = tuple[torch.Size, torch.dtype, torch.device]


def _leaf_text(value: object) -> str:
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device)):
        text = repr(value)
        return short(text, _SUMMARY_CHARS)
    return f"<{type(value).__name__}>"


# TensorInfo is frozen, so equal metadata can share one instance: a dict hit costs far less than
# converting the shape and formatting dtype and device (20,000 times for 10,000 small modules).
_INFOS: dict[tuple[Any, ...], TensorInfo] = {}
_INFO_LIMIT = 4096  # a bound, so a stream of new shapes cannot grow it without end


def meta_info(meta: Meta, name: str) -> TensorInfo:
    """The TensorInfo of a raw ``(shape, dtype, device)`` triple."""
    shape, dtype, device = meta
    key = (shape, dtype, device, name)
    try:
        return _INFOS[key]
    except (KeyError, TypeError):  # TypeError: a symbolic size does not hash
        pass
    info = TensorInfo(
        tuple(int(s) for s in shape), str(dtype).removeprefix("torch."), str(device), name
    )
    if len(_INFOS) < _INFO_LIMIT:
        with contextlib.suppress(TypeError):
            _INFOS[key] = info
    return info


def _info(value: object, name: str) -> TensorInfo | str:
    if isinstance(value, torch.Tensor):
        return meta_info((value.shape, value.dtype, value.device), name)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # pytree does not flatten dataclasses; a model returning one still has tensors inside.
        return "<dataclass>"
    return _leaf_text(value)


def leaf_infos(value: object, name: str) -> tuple[TensorInfo | str, ...]:
    """Flatten `value` with torch.utils._pytree (dataclasses too) into TensorInfo / text leaves.
    ``name`` "" names an output (see the module docstring), anything else is an input's prefix."""
    return _leaves(value, name, output=not name)


def _leaves(value: object, name: str, output: bool, depth: int = 0) -> tuple[TensorInfo | str, ...]:
    if isinstance(value, torch.Tensor):  # the common case, without pytree's cost
        return (_info(value, name),)
    if type(value) is tuple and len(value) == 1 and isinstance(value[0], torch.Tensor):
        return (_info(value[0], name + "[0]"),)  # a forward's usual args: (x,)
    if isinstance(value, tuple) and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(_info(v, f"{name}[{i}]") for i, v in enumerate(value))
    out: list[TensorInfo | str] = []
    for key_path, leaf in key_paths(value):
        leaf_name = _key_text(name, key_path) if output else name + pytree.keystr(key_path)
        if isinstance(leaf, _SCALARS):
            out.append(_info(leaf, leaf_name))
        elif dataclasses.is_dataclass(leaf) and not isinstance(leaf, type):
            fields = {f.name: getattr(leaf, f.name) for f in dataclasses.fields(leaf)}
            out.extend(_leaves(fields, leaf_name, output, depth))
        elif _is_hf_cache(leaf):
            out.extend(_cache_infos(leaf, leaf_name) if output else [_leaf_text(leaf)])
        else:
            held = _attribute_leaves(leaf, leaf_name, output, depth)
            if held:
                out.extend(held)
            else:
                out.append(_info(leaf, leaf_name))
    return tuple(out)


# Leaves that are never opened (no attributes to read), tested first: most leaves are these.
_SCALARS = (
    torch.Tensor,
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    type(None),
    torch.dtype,
    torch.device,
)
# Values whose attributes are no data of the call: code, classes, modules (their parameters are
# the model's, not what the call passed or returned).
_NOT_DATA = (type, nn.Module, types.FunctionType, types.MethodType, types.BuiltinFunctionType,
             types.ModuleType)  # fmt: skip
_MAX_DEPTH = 2  # an object in an object in an object: no deeper
_MAX_ATTRS = 64  # attributes read of one object


def _attribute_leaves(value: object, name: str, output: bool, depth: int) -> list[TensorInfo | str]:
    """A plain object's public attributes that hold tensors (``ImageList.tensors``), flattened
    as any value is and named as attribute access ("tensors", "args[0].tensors"); [] for an
    object that holds none within the bound, or one that is not plain data."""
    if depth >= _MAX_DEPTH or isinstance(value, _NOT_DATA):
        return []
    attrs: dict[str, Any] = {}
    try:
        attrs.update(getattr(value, "__dict__", None) or {})
        for cls in type(value).__mro__:
            slots = cls.__dict__.get("__slots__", ())
            for slot in (slots,) if isinstance(slots, str) else slots:
                if slot not in attrs and hasattr(value, slot):
                    attrs[slot] = getattr(value, slot)
    except Exception:  # noqa: BLE001 - an object that refuses to be read is one text leaf
        return []
    out: list[TensorInfo | str] = []
    for attr, v in list(attrs.items())[:_MAX_ATTRS]:
        if not isinstance(attr, str) or attr.startswith("_") or isinstance(v, _NOT_DATA):
            continue
        if isinstance(v, _SCALARS) and not isinstance(v, torch.Tensor):
            continue
        got = _leaves(v, f"{name}.{attr}" if name else attr, output, depth + 1)
        if any(isinstance(g, TensorInfo) for g in got):
            out.extend(got)
    return out


def key_paths(value: object) -> list[tuple[tuple[Any, ...], Any]]:
    """``tree_flatten_with_path(value)``'s leaves, also where a type was registered with pytree
    without key functions (diffusers' ``BaseOutput`` types): such a node's children are named by
    the mapping key or attribute they are found under, else by their index."""
    try:
        return pytree.tree_flatten_with_path(value)[0]
    except Exception:  # noqa: BLE001 - any registration we cannot name by keys: name it ourselves
        out: list[tuple[tuple[Any, ...], Any]] = []
        _walk_keys(value, (), out)
        return out


def _walk_keys(node: Any, path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], Any]]) -> None:
    # pytree's own node lookup (namedtuples and structseqs resolve to their shared entries);
    # private, but present since torch 2.2 and the only way to reach a node's registration.
    node_def = pytree.SUPPORTED_NODES.get(pytree._get_node_type(node))
    if node_def is None:
        out.append((path, node))
        return
    if node_def.flatten_with_keys_fn is not None:
        pairs, _ = node_def.flatten_with_keys_fn(node)
    else:
        children, _ = node_def.flatten_fn(node)
        pairs = [(_child_key(node, i, child), child) for i, child in enumerate(children)]
    for key, child in pairs:
        _walk_keys(child, (*path, key), out)


def _child_key(node: Any, index: int, child: Any) -> Any:
    """The key a child is found under: a mapping key or a dataclass field holding that very
    object, else its position."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if value is child:
                return pytree.MappingKey(key)
    elif dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            if getattr(node, f.name, None) is child:
                return pytree.GetAttrKey(f.name)
    return pytree.SequenceKey(index)


def _key_text(prefix: str, key_path: tuple[Any, ...]) -> str:
    """An output leaf's place as attribute access: ``['logits'][0]`` reads "logits[0]"."""
    text = prefix
    for key in key_path:
        inner = getattr(key, "key", None)
        if isinstance(key, pytree.MappingKey) and isinstance(inner, str) and inner.isidentifier():
            text = f"{text}.{inner}" if text else inner
        elif isinstance(key, pytree.GetAttrKey):
            text = f"{text}.{key.name}" if text else key.name
        else:
            text += str(key)
    return text


def _is_hf_cache(value: object) -> bool:
    """A transformers ``Cache`` (DynamicCache, EncoderDecoderCache, ...), found by its base
    class's name so that transformers need not be imported."""
    return any(
        c.__name__ == "Cache" and c.__module__.startswith("transformers.")
        for c in type(value).__mro__
    )


def _cache_infos(cache: object, name: str) -> list[TensorInfo | str]:
    """A cache's tensors: ``name[i].keys`` / ``name[i].values`` per layer (transformers >= 4.56
    keeps them in ``cache.layers``), the two caches of an encoder-decoder cache by their
    attribute names; a cache laid out otherwise stays one text leaf."""
    out: list[TensorInfo | str] = []
    parts = [
        (attr, getattr(cache, attr, None))
        for attr in ("self_attention_cache", "cross_attention_cache")
    ]
    if all(_is_hf_cache(part) for _, part in parts):
        for attr, part in parts:
            out.extend(_cache_infos(part, f"{name}.{attr}"))
        return out
    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list):
        return [_leaf_text(cache)]
    for i, layer in enumerate(layers):
        for attr in ("keys", "values"):
            tensor = getattr(layer, attr, None)
            if isinstance(tensor, torch.Tensor):
                out.append(_info(tensor, f"{name}[{i}].{attr}"))
    return out or [_leaf_text(cache)]


def call_inputs(
    args: tuple[Any, ...], kwargs: dict[str, Any] | None
) -> tuple[TensorInfo | str, ...]:
    infos = leaf_infos(args, "args")
    return infos + leaf_infos(kwargs, "kwargs") if kwargs else infos
