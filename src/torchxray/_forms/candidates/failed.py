"""What a failed build's message tells the search (``loop.py``):

- the names it quotes: a constructor that rejects a string often lists the ones it knows
  ("activation function  not found in ACT2FN mapping ['swish', 'silu', ...]"); each becomes a
  candidate of the string fields;
- a number used as a sequence ("'int' object is not subscriptable", "object of type 'float' has
  no len()"): the fields holding a number of that type whose kind is not fixed to a number try the
  sequences the module's layers keep first (a grid ``(56, 56)``, per-block rates), then an int's
  the sizes a buffer the module keeps was made in (``sources/shapes.py``); a class used
  so, the widths of its layers (``layers=(512,) * 8``); a rate left None, per-block rates;
- a class without an attribute the constructor reads ("type object 'Conv2d' has no attribute
  'expansion'"): the field holding it tries the classes of the module's layers that have it;
- a value added as a layer that is none ("int is not a Module subclass", "...Layer is not a
  Module subclass"): the field holding it tries the layers the module holds (the instance of that
  class, or the children it was handed: ``activation=nn.ReLU()``).

While nothing builds, a change whose build fails as far for another such reason is a step
(``teaches``): the values a constructor reads one after the other are fixed in that order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..field import Field
from ..sources.layout import Layout
from ..sources.shapes import shapes

__all__ = ["blames", "learn", "teaches"]

_QUOTED = re.compile(r"""['"]([A-Za-z_][\w.-]{0,40})['"]""")
_SEQUENCE = re.compile(
    r"'(int|float|type|NoneType)' object is not (?:subscriptable|iterable)"
    r"|object of type '(int|float|type|NoneType)' has no"
)
_NOT_A_LAYER = re.compile(r"([\w.]+) is not a Module subclass")
_UNSET_CLASS = "'NoneType' object is not callable"
_NO_CLASS_ATTR = re.compile(r"type object '(\w+)' has no attribute '(\w+)'")
MAX_NAMED = 8
MAX_LAYERS = 4


def _sequences(kind: str, layout: Layout, value: Any) -> list[Any]:
    """The grids (ints) or per-block rates (floats) the layers keep, then the value once per
    block of each container (a stride or a rate given per block, all the same)."""
    counts = [n for n in dict.fromkeys(layout.lengths) if n > 0]
    if kind == "type":
        # A class where widths were meant (``layers=(512,) * 8``, one per conv).
        return [*layout.child_widths, *(list(w) for w in layout.per_item), *layout.stages]
    if kind == "int":
        return [*layout.tuples, *((value,) * n for n in counts)]
    return [*(list(r) for r in layout.drop_rates), *([value] * n for n in counts)]


def _layers(value: Any, module: nn.Module) -> list[nn.Module]:
    if isinstance(value, type):
        found = [m for m in module.modules() if m is not module and type(m) is value]
    else:
        # The layers it was handed sit among its children, or in a container it made of them
        # (``nn.Sequential(*[norm, activation])``).
        found = []
        for m in module.children():
            lists = isinstance(m, (nn.ModuleList, nn.Sequential))
            found += [x for x in m.children() if not x._modules] if lists else [m]
    return found[:MAX_LAYERS]


def teaches(error: str, changed: Any) -> bool:
    """Whether ``error`` says which kind of value a field needs (a sequence, a layer, a class
    where None was: "'NoneType' object is not callable"), and blames a value of another type
    than the one just ``changed`` (an int tried for a pair that is then indexed is no step)."""
    seq, layer = _SEQUENCE.search(error), _NOT_A_LAYER.search(error)
    if seq is not None:
        return type(changed).__name__ != (seq.group(1) or seq.group(2))
    if layer is not None:
        return torch.typename(changed) != layer.group(1)
    attr = _NO_CLASS_ATTR.search(error)
    if attr is not None:
        return isinstance(changed, type) and changed.__name__ != attr.group(1)
    return _UNSET_CLASS in error and changed is not None


def blames(error: str, changed: Any) -> bool:
    """Whether ``error`` is the value just ``changed`` failing for what it is: a division by
    the zero tried (``img_size // patch_size`` with ``patch_size=0``). Such a build got no
    further than the one before, however far the constructor ran (one cut for its size made
    no part that counts, so any failure would otherwise pass for a step: ``loop.py``)."""
    return error.startswith("ZeroDivisionError") and type(changed) in (int, float) and changed == 0


def _classes_with(module: nn.Module, attr: str) -> list[type]:
    found = dict.fromkeys(type(m) for m in module.modules() if m is not module)
    return [c for c in found if hasattr(c, attr)][:MAX_LAYERS]


def learn(
    error: str,
    fields: list[Field],
    pools: dict[str, list[Any]],
    fits: Callable[[Field, Any], bool],
    module: nn.Module | None = None,
    values: dict[str, Any] | None = None,
    layout: Layout | None = None,
) -> None:
    """Add what ``error`` tells to the candidates of the fields it concerns (in place, first);
    ``layout``: the module's shapes (stage 2 read them)."""
    named = list(dict.fromkeys(_QUOTED.findall(error)))[:MAX_NAMED]
    for f in fields:
        if f.kind != "str" and not isinstance(f.value, str):
            continue
        pools[f.name][:0] = [s for s in named if s not in pools[f.name] and fits(f, s)]
    if module is None or values is None or layout is None:
        return
    seq = _SEQUENCE.search(error)
    layer = _NOT_A_LAYER.search(error)
    attr = _NO_CLASS_ATTR.search(error)
    for f in fields:
        v = values.get(f.name)
        new: list[Any] = []
        if seq is not None and f.kind not in ("int", "float", "bool"):
            kind = seq.group(1) or seq.group(2)
            if v is None and kind == "NoneType" and "drop" in f.name:
                # Per-block rates left unset (``len(drop_path)``).
                new = [x for x in _sequences("float", layout, 0.0) if fits(f, x)]
            elif type(v).__name__ == kind and kind != "NoneType":
                new = [x for x in _sequences(kind, layout, v) if fits(f, x)]
                # The sizes a buffer it keeps was made in (a sampling grid, ``shapes.py``).
                grids = [tuple(x) for x in shapes(module)] if kind == "int" else []
                new += [x for x in grids if x not in new and fits(f, x)]
        if layer is not None and v is not None and torch.typename(v) == layer.group(1):
            # The constructor said it: a layer instance, whatever the field's kind was read as.
            new = _layers(v, module)
        if attr is not None and isinstance(v, type) and v.__name__ == attr.group(1):
            # A class the constructor reads an attribute of (``block_type.expansion``): the
            # classes of the module's layers that have it.
            new = [c for c in _classes_with(module, attr.group(2)) if fits(f, c)]
        pools[f.name][:0] = [x for x in new if not any(x is p for p in pools[f.name])]
