"""Factories: a layer made by a factory field, made again from the live layer.

The live layer (or the block around it), as its own form gives it (``Problem.child``: its class
with its own non-default values, ``norm_layer=partial(BatchNorm2d, eps=1e-3)``), goes to a field
that makes it. Layer by layer, the nearest first: the fields whose class the layer is, then the
empty ones and those that hold the class the build made there (a class difference): every
factory for a field named like the layer's class (``conv_layer`` for ``StdConv2d``), the first
three for others. Last of all: a factory costs a child form. Example: timm's ``ConvNormAct(
norm_layer=BatchNorm2d)`` where the live ``bn`` was made with ``eps=1e-3``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tuning import MAX_UNNAMED_FACTORIES
from .handed_kwargs import made_there
from .problem import Problem, cls_of, qualname, stem

__all__ = ["propose"]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    if p.child is None or not made_there(p):
        return
    built = p.diff.built or "" if p.diff.aspect == "class" else ""
    for layer in p.layers:
        for unset in (False, True):
            for f in p.fields:
                v = p.values.get(f.name)
                c = cls_of(v)
                if unset:
                    fit = (
                        v is None
                        and f.kind in ("class", "callable")
                        or (c is not None and layer is p.layers[0] and qualname(c) == built)
                    )
                else:
                    fit = c is not None and isinstance(layer, c)
                if not fit:
                    continue
                word = stem(f.name)
                named = len(word) >= 3 and word in type(layer).__name__.lower()
                for made in p.child(layer)[
                    : MAX_UNNAMED_FACTORIES if unset and not named else None
                ]:
                    yield {f.name: made}
