"""A module as the parts an exact rebuild must reproduce, each a short text under a key.

``parts(module)`` maps ``(path, aspect)`` to text, for every submodule: its class, each item of its
``extra_repr``, the order of its children, each parameter and buffer (logical shape, dtype,
persistence), which paths hold one module or one parameter (``same``, ``tied <name>``: the path
seen first) and each non-tensor attribute its constructor set (numbers, strings, tuples,
functions, classes, configs; objects of other types by their class). Two modules whose parts are
equal rebuild the same network, and a part present in both that differs says where a rebuild
would go wrong (``_forms/rebuild/compare.py``).

Logical view: a parametrized tensor (``weight_norm``, ``spectral_norm``, ``orthogonal``) is one
tensor of its logical shape, computed on meta from the originals (its ``parametrizations`` child is
not listed; the legacy hook-based functions' tensors likewise: ``hooked.py``; below the module, its
text names the parametrization where the module's constructor can add one: ``wrapping.py``), and a tensor subclass (torchao's quantized weights, a DTensor) has the shape and dtype
it reports. ``kinds=True`` adds what the logical view hides (the parametrization's classes, the
tensor subclass): an edit restores them (``_patch/placement.py``) and checks that it did.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
import zlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.nn.utils import parametrize

from ..._unwrap import original_class
from ..configs import is_config
from .hooked import norm_hooks
from .wrapping import wraps_layers

__all__ = ["Parts", "logical", "parts", "split_repr", "tensor_kind", "typename"]

# Attributes every nn.Module has: bookkeeping, not constructor values.
_BASE = frozenset(nn.Module().__dict__) | {"_is_hf_initialized", "_initialize_weights"}
_PLAIN = (bool, int, float, complex, str, bytes, type(None))
_DEPTH = 4
# A device written as text (``self.device = device`` given ``"cpu"``): kept as the string, where
# a meta build keeps the meta device it is handed in its place.
_DEVICE_TEXT = re.compile(r"(cpu|cuda|meta|mps|xpu|hpu|xla|npu)(:\d+)?")
_KEYED = re.compile(r"([A-Za-z_]\w*)=")
# A tensor's legacy type name and the device torch's containers print in their repr
# (ParameterDict / ParameterList: "[torch.cuda.FloatTensor of size 8 (cuda:0)]"): a rebuild made
# on meta names another device, and where the module lives is no part of what its constructor
# made (the gate compares the tensors' shapes and dtypes apart).
_DEVICE = re.compile(r"\btorch\.[a-z_]\w*\.(\w*Tensor\b)|(?<=\d) \([a-z_]\w*(?::\d+)?\)(?=\])")


@dataclasses.dataclass
class Parts:
    """``items``: (path, aspect) -> text; ``summary``: path -> ``Class(extra_repr)``; ``kinds``:
    (path, "param <name>" / "buffer <name>") -> the tensor subclass (``typename``) of each tensor
    that is not a plain one, whatever ``kinds`` asked (the gate compares them apart from the
    logical items, ``_forms/rebuild/compare.py``); ``scripted``: paths of TorchScript modules (no Python
    constructor: a rebuild makes them again only where the constructor scripts them itself)."""

    items: dict[tuple[str, str], str]
    summary: dict[str, str]
    kinds: dict[tuple[str, str], str] = dataclasses.field(default_factory=dict)
    scripted: frozenset[str] = frozenset()


def split_repr(text: str) -> list[str]:
    """``extra_repr`` cut at its top-level commas: ``"8, 32, eps=(1, 2)"`` -> 3 items."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*out, tail] if tail or out else []


def _extra(m: nn.Module) -> str:
    try:
        return _DEVICE.sub(lambda g: f"torch.{g.group(1)}" if g.group(1) else "", m.extra_repr())
    except Exception as e:  # noqa: BLE001 - an extra_repr that needs state a fresh build lacks
        return f"<extra_repr raised {type(e).__name__}>"


def tensor_kind(t: torch.Tensor) -> str:
    """ "" for a plain tensor or parameter, else the subclass's name (a quantized weight)."""
    cls = type(t)
    if cls in (torch.Tensor, nn.Parameter) or is_lazy(t):
        return ""
    return cls.__name__


def typename(t: torch.Tensor) -> str:
    """A tensor subclass as a person names it: its package and class ("torchao Int8Tensor")."""
    cls = type(t)
    return f"{cls.__module__.split('.')[0]} {cls.__name__}"


def _tensor_text(t: torch.Tensor | None, kinds: bool) -> str:
    if t is None:
        return "None"
    if is_lazy(t):
        return "uninitialized"
    text = f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}"
    kind = tensor_kind(t) if kinds else ""
    return f"{text} {kind}" if kind else text


def logical(m: nn.Module, name: str) -> torch.Tensor | None:
    """The parametrized tensor ``name`` computed on meta from meta copies of its originals (never
    on the live ones: spectral_norm updates its buffers when it runs in training mode)."""
    plist = typing.cast(nn.Module, typing.cast(Any, m.parametrizations)[name])
    state = {
        n: torch.empty_like(t, device="meta") for n, t in plist.state_dict(keep_vars=True).items()
    }
    try:
        out = torch.func.functional_call(plist, state, ())
    except Exception:  # noqa: BLE001 - a parametrization that cannot run on meta: its original
        out = state.get("original", state.get("original1", state.get("original0")))
    return out if isinstance(out, torch.Tensor) else None


def _walk(module: nn.Module, path: str = "") -> Iterator[tuple[str, nn.Module]]:
    yield path, module
    skip = "parametrizations" if parametrize.is_parametrized(module) else None
    for name, child in module._modules.items():
        if child is not None and name != skip:
            yield from _walk(child, f"{path}.{name}" if path else name)


def _qualname(obj: Any) -> str:
    return (
        f"{getattr(obj, '__module__', '') or ''}.{getattr(obj, '__qualname__', type(obj).__name__)}"
    )


def _value(v: Any, depth: int = 0) -> str:
    """A constructor-set value as text that equal values share (identity where it is meaning)."""
    if isinstance(v, str) and _DEVICE_TEXT.fullmatch(v):
        return "<device>"  # as a torch.device below: a meta build stands for any device
    if isinstance(v, _PLAIN):
        return repr(v)
    if depth > _DEPTH:
        return f"<{type(v).__qualname__}>"
    if isinstance(v, enum.Enum):
        return repr(v)
    if isinstance(v, torch.dtype):
        return str(v)
    if isinstance(v, torch.device):
        return "<device>"  # a meta build stands for one on any device
    if isinstance(v, torch.Tensor):
        return f"tensor{_tensor_text(v, False)}"
    if isinstance(v, nn.Module):
        return f"<module {type(v).__qualname__}>"
    if isinstance(v, type):
        return _qualname(v)
    if isinstance(v, (tuple, list, torch.Size)):
        inner = ", ".join(_value(x, depth + 1) for x in list(v)[:64])
        return f"{type(v).__name__}({inner}{', ...' if len(v) > 64 else ''})"
    if isinstance(v, (set, frozenset)):
        return f"{type(v).__name__}({', '.join(sorted(_value(x, depth + 1) for x in v))})"
    if isinstance(v, dict):
        # Private keys are bookkeeping (diffusers' config records which values were defaults, in
        # no fixed order).
        items = sorted(
            (_value(k, depth + 1), _value(x, depth + 1))
            for k, x in v.items()
            if not (isinstance(k, str) and k.startswith("_"))
        )
        return "{" + ", ".join(f"{k}: {x}" for k, x in items[:64]) + "}"
    if isinstance(v, functools.partial):
        args = ", ".join(_value(a, depth + 1) for a in v.args)
        kw = _value(dict(v.keywords), depth + 1)
        return f"partial({_value(v.func, depth + 1)}, {args}, {kw})"
    if isinstance(v, types.MethodType):
        return f"method {_qualname(v.__func__)} of <{type(v.__self__).__qualname__}>"
    if isinstance(v, types.FunctionType):
        name = _qualname(v)
        if "<" in v.__qualname__:
            # Functions made in one constructor share a qualname (``lambda x: 0`` and ``lambda
            # x: x`` by a flag): their code tells them apart, never two builds of one.
            code = v.__code__
            text = repr((code.co_consts, code.co_names, code.co_varnames)).encode()
            name += f"@{code.co_firstlineno}:{zlib.crc32(code.co_code + text):x}"
        if "<" in v.__qualname__ and v.__closure__:
            # A closure made per instance (a lambda over a width): its captured values are its
            # identity, not the function object.
            cells = []
            for c in v.__closure__:
                try:
                    cells.append(_value(c.cell_contents, depth + 1))
                except ValueError:  # an empty cell
                    cells.append("<empty>")
            return f"fn {name}({', '.join(cells)})"
        return f"fn {name}"
    if callable(v) and hasattr(v, "__qualname__"):
        return f"fn {_qualname(v)}"  # builtins, torch functions
    if is_config(v):
        try:
            fields = {k: x for k, x in vars(v).items() if not k.startswith("_")}
        except TypeError:
            fields = {}
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: getattr(v, f.name, None) for f in dataclasses.fields(v)}
        return f"{type(v).__qualname__}{_value(fields, depth + 1)}"
    return f"<{type(v).__qualname__}>"


def _attrs(m: nn.Module) -> Iterator[tuple[str, str]]:
    wrapped = {h.name for h in norm_hooks(m)}  # recomputed before each forward: ``hooked.py``
    for key, v in m.__dict__.items():
        if key in _BASE or isinstance(v, (nn.Module, nn.Parameter)):
            continue
        if isinstance(v, torch.Tensor) and (key in m._buffers or key in wrapped):
            continue
        yield key, _value(v)


def parts(module: nn.Module, kinds: bool = False) -> Parts:
    items: dict[tuple[str, str], str] = {}
    summary: dict[str, str] = {}
    scripted: set[str] = set()
    types: dict[tuple[str, str], str] = {}
    # Sharing is part of what a constructor makes: one module at two paths (``layers.append(
    # layers[0])``), one parameter in two modules (a head tied to the embedding). A rebuild that
    # makes two where the live module holds one has twice the weights, and equal texts would
    # not show it: each repeat is an item of its own, at the top of the repeated subtree.
    first_module: dict[int, str] = {}
    first_param: dict[int, str] = {}
    repeats: set[str] = set()
    # A parametrization below the module is part of what its constructor made where its code can
    # make one (``wrapping.py``); elsewhere it came after, as on the module itself.
    made = wraps_layers(original_class(type(module)))
    for path, m in _walk(module):
        seen = first_module.setdefault(id(m), path)
        if seen != path and path.rpartition(".")[0] not in repeats:
            items[path, "same"] = seen
        if seen != path:
            repeats.add(path)
        if isinstance(m, torch.jit.ScriptModule):
            scripted.add(path)
        cls = original_class(type(m))
        extra = _extra(m)
        summary[path] = f"{cls.__name__}({extra})"
        items[path, "class"] = _qualname(cls)
        for i, item in enumerate(split_repr(extra)):
            # "eps=1e-05" is keyed by its name (a repr that leaves out a default keeps the other
            # items aligned); a positional item by its place.
            keyed = _KEYED.match(item)
            if keyed and (keyed.group(1) in m._parameters or keyed.group(1) in m._buffers):
                continue  # a tensor described in the repr (torchao's "weight=Tensor: ..."): below
            items[path, f"repr {keyed.group(1) if keyed else i}"] = item
        hidden = "parametrizations" if parametrize.is_parametrized(m) else None
        # `.keys()`, not the mapping: a ScriptModule's `_modules` is a wrapper without __iter__,
        # which Python then indexes with 0, 1, ... (KeyError: 0).
        items[path, "children"] = ", ".join(n for n in m._modules.keys() if n != hidden)
        for n, p in m._parameters.items():
            items[path, f"param {n}"] = _tensor_text(p, kinds)
            if p is not None and path not in repeats:
                here = f"{path}.{n}" if path else n
                tied = first_param.setdefault(id(p), here)
                if tied != here:
                    items[path, f"tied {n}"] = tied
            if p is not None and tensor_kind(p):
                types[path, f"param {n}"] = typename(p)
        for n, b in m._buffers.items():
            lost = " non-persistent" if n in m._non_persistent_buffers_set else ""
            items[path, f"buffer {n}"] = _tensor_text(b, kinds) + lost
            if b is not None and tensor_kind(b):
                types[path, f"buffer {n}"] = typename(b)
        for h in norm_hooks(m):  # the legacy weight_norm / spectral_norm (``hooked.py``)
            for n in h.params:
                items.pop((path, f"param {n}"), None)
                items.pop((path, f"tied {n}"), None)
            for n in h.buffers:
                items.pop((path, f"buffer {n}"), None)
            text = _tensor_text(m._parameters[h.original], False)
            # Named below the module a form is asked of (a constructor that chooses weight_norm
            # or spectral_norm shows its choice), not on it: what wrapped it came after.
            shown = kinds or bool(path)
            items[path, f"param {h.name}"] = f"{text} wrapped by {h.text}" if shown else text
        if parametrize.is_parametrized(m):
            lists = typing.cast(nn.ModuleDict, m.parametrizations)
            for n, plist in lists.items():
                text = _tensor_text(logical(m, n), False)
                if kinds or (made and path):
                    steps = typing.cast(nn.ModuleList, plist)
                    text += " parametrized by " + ", ".join(type(p).__name__ for p in steps)
                original = plist._parameters.get("original", plist._parameters.get("original0"))
                where = "param" if original is not None else "buffer"
                items[path, f"{where} {n}"] = text
        for key, text in _attrs(m):
            items[path, f"attr {key}"] = text
    return Parts(items, summary, types, frozenset(scripted))
