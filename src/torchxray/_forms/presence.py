"""Parts on one side only and containers of another length: the guide's proposals
(``_forms/guide.py``) that name the part.

- a part the live module has and the build lacks, or the other way round, whose name a field's
  name shares (``layer_scale`` and ``layer_scale_init_value``, ``rel_pos`` and ``rel_pos_cls``,
  ``cpe`` and ``shared_cpe``): 0 for a number that gates it, None, the opposite flag, the live
  layer for an empty field that takes a layer;
- a container with another number of blocks: a depth field moves with one rate per block;
- a numbered layer only the build has (``convgru2`` past the live ``convgru1``; one the live
  module holds as Identity counts too): the sequence fields long enough to have made it,
  shortened together to the layers the live module has, then each alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from .exact import Difference
from .field import Field

__all__ = ["by_part", "flag_like", "numbered", "per_block", "stem"]


def flag_like(f: Field) -> bool:
    return f.kind == "bool" or isinstance(f.value, bool)


def per_block(
    fields: list[Field], values: dict[str, Any], b: int, live: int
) -> Iterator[dict[str, Any]]:
    """A container of ``b`` blocks where the live one holds ``live``: a depth field at ``b``
    moves to ``live`` with one rate per block (``drop_path[i]``; a rate or None kept for a
    per-block list makes every deeper build fail)."""
    for f in fields:
        if type(values.get(f.name)) is not int or values[f.name] != b or "drop" in f.name:
            continue
        for g in fields:
            v = values.get(g.name)
            listed = "list" in g.annotation.lower() or "sequence" in g.annotation.lower()
            if g is f or not ("drop" in g.name or listed) or isinstance(v, bool):
                continue
            if v is None or isinstance(v, (int, float)):
                for rate in dict.fromkeys((float(v or 0.0), 0.0)):
                    yield {f.name: live, g.name: [rate] * live}


def stem(name: str) -> str:
    """A parameter's name without the words that say how it is given (``conv_layer`` -> conv)."""
    for end in ("_layer", "_cls", "_fn", "_module", "_type"):
        name = name.removesuffix(end)
    for start in ("use_", "add_", "with_", "has_"):
        name = name.removeprefix(start)
    return name


def by_part(
    d: Difference, fields: list[Field], values: dict[str, Any], target: nn.Module | None
) -> Iterator[tuple[str, Any]]:
    """A part on one side only whose name a field's name shares (the parameter ``layer_scale``
    for ``layer_scale_init_value``, the layer ``rel_pos`` for ``rel_pos_cls``): that field first,
    0 for a number that gates the part (``if value > 0``), None, the opposite flag, or the live
    layer itself where the field is empty (a layer shared between blocks, ``shared_cpe``)."""
    kind = d.aspect.split(" ", 1)
    identity = "torch.nn.modules.linear.Identity"
    gone = d.live is None or d.live == identity  # the live module has no such part
    if d.aspect == "module" or d.aspect == "class" and identity in (d.live, d.built):
        part = d.path.rsplit(".", 1)[-1]
    elif kind[0] in ("param", "buffer") and (d.live is None or d.built is None) and len(kind) > 1:
        part = kind[1]
    else:
        return
    part = part.lower()
    if len(part) < 3 or part.isdigit():
        return
    for f in fields:
        low = f.name.lower()
        word = stem(low)
        # Names share a word's start: pooler and add_pooling_layer.
        if part not in low and not (len(word) >= 3 and word in part) and word[:4] != part[:4]:
            continue
        v = values.get(f.name)
        if flag_like(f):
            yield f.name, not v
        elif type(v) in (int, float) and v and gone:
            yield f.name, type(v)(0)
        elif isinstance(v, list) and v and all(type(x) is float for x in v) and gone:
            yield f.name, [0.0] * len(v)  # per-block rates
        elif v is not None and not f.required:
            yield f.name, None
        elif v is None and d.aspect == "module" and isinstance(target, nn.Module) and not gone:
            if f.kind not in ("class", "callable"):
                yield f.name, target


def numbered(
    d: Difference, fields: list[Field], values: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """A layer named with its number ``n`` (``convgru2``) that only the build has: every sequence
    field of at least ``n`` items (one per such layer: kernel sizes and paddings, each a pair)
    keeps its first ``n - 1``, all together (a constructor checks that their lengths agree)."""
    added = d.aspect == "module" and d.live is None and d.built is not None
    if not added and not (d.aspect == "class" and d.live == "torch.nn.modules.linear.Identity"):
        return  # (a layer made only when a width is given, else Identity, counts as none)
    name = d.path.rsplit(".", 1)[-1]
    digits = len(name) - len(name.rstrip("0123456789"))
    if not digits or digits == len(name):
        return
    n = int(name[-digits:])
    if n < 2:
        return
    change = {
        f.name: v[: n - 1]
        for f in fields
        if isinstance(v := values.get(f.name), (tuple, list)) and len(v) >= n
    }
    if change:
        yield change
    for name, v in change.items() if len(change) > 1 else []:
        yield {name: v}  # one sequence per kind of layer (corr_layers, flow_layers)
