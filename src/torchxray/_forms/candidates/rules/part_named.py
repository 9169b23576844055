"""Part named: a part on one side only whose name a field's name shares.

The parameter ``layer_scale_init_value`` for the layer ``layer_scale``, ``rel_pos_cls`` for
``rel_pos``, ``add_pooling_layer`` for ``pooler``: that field is proposed 0 for a number that gates
the part (``if value > 0``), zero rates for per-block rates, None, the opposite flag, or the live
layer itself where the field is empty (a layer shared between blocks, ``shared_cpe``). Example:
transformers' ``BertModel(config, add_pooling_layer=True)`` builds a ``pooler`` the live model
(``add_pooling_layer=False``) lacks: ``add_pooling_layer`` False.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from .problem import Problem, flag_like, stem

__all__ = ["propose"]

_IDENTITY = "torch.nn.modules.linear.Identity"


def _part(p: Problem) -> str:
    d = p.diff
    kind = d.aspect.split(" ", 1)
    if d.aspect == "module" or d.aspect == "class" and _IDENTITY in (d.live, d.built):
        return d.path.rsplit(".", 1)[-1].lower()
    if kind[0] in ("param", "buffer") and (d.live is None or d.built is None) and len(kind) > 1:
        return kind[1].lower()
    return ""


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    part = _part(p)
    if len(part) < 3 or part.isdigit():
        return
    d = p.diff
    gone = d.live is None or d.live == _IDENTITY  # the live module has no such part
    for f in p.fields:
        low = f.name.lower()
        word = stem(low)
        # Names share a word's start: pooler and add_pooling_layer.
        if part not in low and not (len(word) >= 3 and word in part) and word[:4] != part[:4]:
            continue
        v = p.values.get(f.name)
        if flag_like(f):
            yield {f.name: not v}
        elif type(v) in (int, float) and v and gone:
            yield {f.name: type(v)(0)}
        elif isinstance(v, list) and v and all(type(x) is float for x in v) and gone:
            yield {f.name: [0.0] * len(v)}  # per-block rates
        elif v is not None and not f.required:
            yield {f.name: None}
        elif v is None and d.aspect == "module" and isinstance(p.target, nn.Module) and not gone:
            if f.kind not in ("class", "callable"):
                yield {f.name: p.target}
