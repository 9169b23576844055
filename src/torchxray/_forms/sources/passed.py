"""Source: the values an argument's uses lead to (``usage.py`` reads the uses).

- ``handed``: the layer a constructor handed the argument to holds it as its own argument:
  ``self.G = Generator(nz, ngf, 3, img_size)`` keeps ``ngf`` as the ``ngf`` of ``G``'s form, and
  ``nn.TransformerEncoder(layer, n_layer)`` keeps ``n_layer`` as its ``num_layers``. The layer
  is the one the call's result was kept under, or else the module's layers of the callee's
  class; its value is read from its own form (a torch layer's is read off its attributes; a
  layer of the user's is searched, within the parent's budget). A size torch keeps expanded
  (``kernel_size=(3,)``) is offered as the int first, as it was most likely written.
- ``kept``: an argument kept under another name (``self.chars = tokens``), or its items after
  it was unpacked (``self.patch_height, self.patch_width = pair(patch_size)``'s names).
- ``holders``: an object whose fields the constructor reads (``args.n_embd``): the objects with
  all those fields that the module, its layers or the modules holding it keep (an argparse
  namespace the model's root keeps as ``self.args``; a config a transformers layer keeps), then
  its layers that have them (a block it clones, read as ``layer.size``).
- ``keys``: the keys of the table the argument is looked up in (``{"batch": nn.BatchNorm1d,
  "layer": nn.LayerNorm}[norm]``), the key of the class the module holds under the argument's
  name first.

Each is a candidate, proven or dropped by the search's builds.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..._unwrap import original_class
from ..budget import BUDGET, Budget
from ..field import Child, Field, found, guessed
from ..values import same_value
from .layout import descendants
from .literals import compared_strings
from .scan import LIVE, hashable
from .usage import Handed, Usage

__all__ = ["handed", "handed_rivals", "handed_starts", "holders", "keys", "kept", "memoized"]

MAX_LAYERS = 3  # torch layers of the callee's class read, where the call's result was not kept
# The work all the layers' forms opened for one form may spend (a fifth of the search's,
# ``SEARCH_WORK``): on the zoo, a DenseNet whose blocks' forms took the whole budget before
# the search could find its block_config; the GAN's generator and discriminator take ~3,000.
HANDED_WORK = 10_000
DEPTH = 5  # levels looked down for them (a ViT's attention: layers.0.0.fn)
MAX_UP = 6  # modules holding the module, looked up for an object read by its fields
MAX_HOLDERS = 4
_PLAIN = (bool, int, float, complex, str, bytes, type(None), torch.Tensor, nn.Module, type)


def memoized(child: Child) -> Child:
    """``child`` (a layer's own form) opened once per layer (several arguments are often handed
    to one layer: a GAN's generator takes ``nz``, ``ngf`` and ``img_size``), and all of them
    together within ``HANDED_WORK`` of the form's budget (``_forms/budget.py``): the search
    that proves the values needs the rest."""
    made: dict[int, tuple[nn.Module, Any]] = {}
    outer = BUDGET.get()
    share = Budget(HANDED_WORK, outer.ceiling, outer) if outer is not None else None

    def form(layer: nn.Module) -> Any:
        got = made.get(id(layer))
        if got is None or got[0] is not layer:
            token = BUDGET.set(share) if share is not None else None
            try:
                value = None if share is not None and share.out else child(layer)
            except Exception:  # noqa: BLE001 - a layer without a readable form tells nothing
                value = None
            finally:
                if token is not None:
                    BUDGET.reset(token)
            got = made[id(layer)] = (layer, value)
        return got[1]

    return form


def _layers(module: nn.Module, h: Handed) -> list[nn.Module]:
    """The layers the call may have made: the one kept under ``h.kept``, else those of the
    callee's class inside it (a container it fills), else anywhere in the module."""
    at = module._modules.get(h.kept) if h.kept else None
    if at is not None and original_class(type(at)) is h.callee:
        return [at]
    inside = [at] if at is not None else []
    # A layer of the user's is searched for its form: the first one made (with the argument as
    # it was given, before a loop changed it) is read; torch's are read off their attributes.
    most = MAX_LAYERS if h.callee.__module__.startswith("torch.") else 1
    for root in [*inside, module]:
        found = [m for m in descendants(root, DEPTH) if original_class(type(m)) is h.callee]
        if found:
            return found[:most]
    return []


def _written(value: Any) -> list[Any]:
    """A size torch keeps expanded (``(3,)``, ``(2, 2)``): the int first, then the tuple."""
    if type(value) is tuple and value and all(type(x) is int and x == value[0] for x in value):
        return [value[0], value]
    return [value]


def _as_is(value: Any) -> list[Any]:
    return [value]


def handed(module: nn.Module, u: Usage, child: Child | None) -> list[Any]:
    """The values of the layers the argument was handed to (see the module doc)."""
    out: list[Any] = []
    for h in u.handed:
        for layer in _layers(module, h):
            form = child(layer) if child is not None else None
            fields = getattr(form, "fields", None) or ()
            got = next((f for f in fields if f.name == h.param), None)
            if got is None and h.index < 0:
                # A keyword its class has no parameter of collects in its ``**kwargs``
                # (``MoELayer(d, act=act)`` into ``**expert_kw``): the entry there is the value.
                got = _spread(fields, h.param)
            # torch keeps sizes expanded; a layer of the user's keeps what it was given.
            written = _written if type(layer).__module__.startswith("torch.") else _as_is
            # A value the layer's form found, or flagged as one of several that rebuild it
            # alike (a candidate still: this module's own rebuild proves it, or flags it too).
            if got is not None and not found(got):
                got = None
            if got is not None and h.index >= 0:
                # One of the values a *args collects: the one at the argument's place.
                items = got.value if isinstance(got.value, (tuple, list)) else ()
                out += [items[h.index]] if h.index < len(items) else []
            elif got is not None:
                out += written(got.value)
            elif form is None and h.param in layer.__dict__:
                out += written(layer.__dict__[h.param])
    return out


def handed_starts(
    module: nn.Module, fields: list[Field], uses: dict[str, Usage], child: Child
) -> dict[str, Any]:
    """Where the search starts each field at its default that the constructor handed as it was
    given to a layer it keeps (``self.f = Wide_ResNet(depth, norm=norm)``): at the value that
    layer's own form found, of the default's type, one value for every such layer (a default
    of None often stands for another argument, ``num_gates = in_channels``: it stays). The
    default builds another model (a depth of 28 for a live 10, spending a slow constructor's
    budget on its extra blocks before the value the layer holds is tried); like
    ``candidates/held.py``'s starts, it is a start, no reading: the default stays among the
    candidates, the rebuild proves it."""
    out: dict[str, Any] = {}
    for f in fields:
        u = uses.get(f.name)
        if u is None or f.origin != "default" or f.value is None or f.kind in ("varargs", "varkw"):
            continue
        if f.annotation:  # the layer's form is opened where nothing annotates it (``pools.py``)
            continue
        to_kept = tuple(h for h in u.handed if h.kept and h.index < 0)
        if not to_kept:
            continue
        got = handed(module, dataclasses.replace(u, handed=to_kept), child)
        plain = [v for v in got if type(v) is type(f.value)]
        if plain and len(plain) == len(got) and all(same_value(v, plain[0]) for v in plain):
            if not same_value(plain[0], f.value):
                out[f.name] = plain[0]
    return out


def handed_rivals(
    module: nn.Module, fields: list[Field], uses: dict[str, Usage], child: Child
) -> dict[str, list[Any]]:
    """Each guessed, unannotated field the constructor handed as it was given to a layer it
    keeps, whose own form shows that value as a guess among others that rebuild the layer alike
    (a Wide-ResNet's depth 10, where 4 makes the same blocks): the value and those rivals. The
    settling (``candidates/ambiguous.py``) tries them on this module's rebuild; where one
    rebuilds it as exactly, this field is flagged too, never shown as proven. (The layer's form
    is the one the pools opened, ``memoized``: nothing is built again.)"""
    out: dict[str, list[Any]] = {}
    for f in fields:
        u = uses.get(f.name)
        if u is None or not guessed(f) or f.annotation:
            continue
        for h in u.handed:
            if not h.kept or h.index >= 0:
                continue
            for layer in _layers(module, h):
                form = child(layer)
                fields_of = getattr(form, "fields", None) or ()
                got = next((x for x in fields_of if x.name == h.param), None)
                if got is not None and got.rivals:
                    alike = out.setdefault(f.name, [got.value])
                    alike += [v for v in got.rivals if not any(same_value(v, a) for a in alike)]
    return out


def _spread(fields: Any, name: str) -> Any:
    """The value a layer's ``**kwargs`` field holds under ``name``, as a field of its own (its
    dict's found or flagged status), or None."""
    for f in fields:
        if f.kind == "varkw" and type(f.value) is dict and name in f.value:
            return dataclasses.replace(f, name=name, value=f.value[name])
    return None


def kept(module: nn.Module, u: Usage) -> list[Any]:
    """The attributes the argument was kept under, by another name, the layer at its place in
    a container it was handed to, or its items after it was unpacked (``ph, pw = pair(patch_size); self.ph, self.pw = ph, pw``: ``(ph, pw)``, or
    the int where they are equal, as it was most likely written)."""
    out = [_held(module, k) for k in u.kept if _holds(module, k)]
    if u.items_kept and all(_holds(module, k) for k in u.items_kept):
        out += _written(tuple(_held(module, k) for k in u.items_kept))
    for attr, key in u.within:
        out += _inside(_held(module, attr), key) if _holds(module, attr) else []
    for h in u.handed:
        # Handed to a container at its place (self.online = nn.Sequential(backbone, head)):
        # the container's layer at that place, read off it without a form.
        at = module._modules.get(h.kept) if h.kept and h.index >= 0 else None
        if isinstance(at, (nn.Sequential, nn.ModuleList)) and h.callee is type(at):
            out += [at[h.index]] if h.index < len(at) else []
    return out


def _inside(held: Any, key: Any) -> list[Any]:
    """The argument inside what an attribute holds (``Usage.within``): a literal's entry at
    ``key``, or with ``key`` ``("cell", name)`` the value a lambda closes over under that name."""
    if isinstance(key, tuple):
        code = getattr(held, "__code__", None)
        cells = getattr(held, "__closure__", None) or ()
        if (
            not isinstance(held, types.FunctionType)
            or code is None
            or key[1] not in code.co_freevars
        ):
            return []
        try:
            return [cells[code.co_freevars.index(key[1])].cell_contents]
        except (ValueError, IndexError):  # an empty cell
            return []
    if isinstance(held, dict) and key in held:
        return [held[key]]
    if isinstance(held, (tuple, list)) and type(key) is int and key < len(held):
        return [held[key]]
    return []


# Where ``self.name = value`` puts a value: nn.Module.__setattr__ keeps a module in ``_modules``
# and a Parameter in ``_parameters``, everything else in ``__dict__`` (GINConv's ``self.nn = nn_``).
def _stores(module: nn.Module) -> tuple[dict[str, Any], ...]:
    return (module.__dict__, module._modules, module._parameters)


def _holds(module: nn.Module, name: str) -> bool:
    return any(name in d for d in _stores(module))


def _held(module: nn.Module, name: str) -> Any:
    return next(d[name] for d in _stores(module) if name in d)


def _around(module: nn.Module) -> Iterator[nn.Module]:
    """The module, its layers, then the modules holding it, nearest first."""
    yield module
    yield from descendants(module)
    if not hashable(module):
        return
    LIVE.placed(module)
    at = module
    for _ in range(MAX_UP):
        place = LIVE.place(at)
        if place is None:
            return
        at = place[0]
        yield at


def _has(obj: Any, names: tuple[str, ...]) -> bool:
    try:
        return all(hasattr(obj, n) for n in names)
    except Exception:  # noqa: BLE001 - a property that raises
        return False


def holders(module: nn.Module, u: Usage) -> list[Any]:
    """Objects with every field the constructor reads off the argument (see the module doc)."""
    if not u.fields:
        return []
    out: list[Any] = []
    for m in _around(module):
        for v in m.__dict__.values():
            if isinstance(v, (*_PLAIN, dict, list, tuple, set, types.FunctionType)):
                continue
            if _has(v, u.fields) and not any(v is o for o in out):
                out.append(v)
        if len(out) >= MAX_HOLDERS:
            break
    # A layer is read by its fields too (``LayerNorm(layer.size)`` of the block it clones).
    layers = [m for m in descendants(module) if _has(m, u.fields)]
    return [*out[:MAX_HOLDERS], *layers[:MAX_HOLDERS]]


def keys(module: nn.Module, name: str, u: Usage) -> list[Any]:
    """The table's keys, the one whose class the module holds under ``name`` first, then the
    other strings the constructor compares the argument with (a mode the table leaves out:
    ``if padding_type in pads: ... elif padding_type == "zero": p = 1``)."""
    if not u.table:
        return []
    held = module.__dict__.get("_modules", {}).get(name, module.__dict__.get(name))
    cls = original_class(type(held)) if isinstance(held, nn.Module) else None
    first = [k for k, v in zip(u.table, u.table_values) if cls is not None and v is cls]
    compared = compared_strings(original_class(type(module)), name)
    return list(dict.fromkeys([*first, *u.table, *compared]))
