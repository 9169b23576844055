"""Layer class: the build made a layer of another class than the live one.

A field holding the built class (or a partial of it) is proposed the live class; an empty class
field the live class; a string that names the built layer (timm's ``act_layer="relu"``) the live
layer's name, in the string's case (``getattr(nn, kind)`` with ``kind="LSTM"``), and class; an
element of a per-layer tuple of classes (``act_layer=(nn.ReLU6, None)``) the live class, or None
where the live layer is an Identity (no layer there), and a single class of such a field a pair;
a string whose mode made the built class (``"avg"`` for ``DownsampleAvg``) the other strings its
code compares it with (``Problem.modes``). Example: timm's ``ConvNormAct(act_layer="relu")``
where the live block holds a ``SiLU``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch import nn

from ...field import Field
from .problem import Problem, cls_of, qualname

__all__ = ["propose"]


def _per_layer(f: Field, v: Any, built: str, live_cls: type) -> Iterator[dict[str, Any]]:
    gone = live_cls is nn.Identity
    if isinstance(v, tuple) and v and any(cls_of(x) is not None for x in v):
        at = [i for i, x in enumerate(v) if (c := cls_of(x)) is not None and qualname(c) == built]
        for i in at:
            swap = None if gone else live_cls
            yield {f.name: tuple(swap if j == i else x for j, x in enumerate(v))}
    elif (c := cls_of(v)) is not None and qualname(c) == built and gone:
        if isinstance(f.default, tuple):
            yield from ({f.name: (v, None)}, {f.name: (None, v)})


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    if d.aspect != "class" or p.target is None:
        return
    live_cls = type(p.target)
    built = d.built or ""
    built_name = built.rsplit(".", 1)[-1].lower()
    for f in p.fields:
        v = p.values.get(f.name)
        c = cls_of(v)
        if c is not None and qualname(c) == d.built:
            yield {f.name: live_cls}
        elif v is None and f.kind in ("class", "callable"):
            yield {f.name: live_cls}
        elif isinstance(v, str) and v and v.lower().replace("_", "") == built_name:
            # A layer named by a string (timm's act_layer="relu"): the live layer's name, in the
            # string's own case (``getattr(nn, kind)`` reads "RNN", a registry "rnn").
            name = live_cls.__name__
            cased = name if v == built.rsplit(".", 1)[-1] else name.lower()
            yield from ({f.name: n} for n in dict.fromkeys((cased, name.lower())))
            yield {f.name: live_cls}
        yield from _per_layer(f, v, built, live_cls)
        if isinstance(v, str) and len(v) > 1 and v.lower() in built_name:
            # The mode the string chose made the built class (DownsampleAvg for "avg"): the
            # other modes its code knows.
            yield from ({f.name: m} for m in p.modes.get(f.name, ()) if m != v)
