"""A model given to a constructor that copies its layers, read back as those layers gathered
under their names (issue 40, item 4): ``IntermediateLayerGetter(model, return_layers)`` keeps the
children of ``model`` up to the last layer it returns, and a backbone wrapper hands its
``backbone`` to such a getter. The model given is gone (a record holds it weakly), but any
module whose children are the kept layers, in order and under the same names, makes the same
module again: ``nn.Sequential`` of the live module's own children (or of a child's, for a wrapper
that handed the model on). The build decides which reading, if any, is exact. The layers are the
live ones, shared: a rebuild made from them carries the same weights.
"""

from __future__ import annotations

import types
import typing
from collections import OrderedDict
from typing import Any

from torch import nn

from ..._signature import resolve
from ..._unwrap import original_class

__all__ = ["gathered", "takes_module"]


def takes_module(cls: type, name: str) -> bool:
    """Whether parameter ``name`` of ``cls`` is annotated as a module (``nn.Module``)."""
    try:
        p = resolve(cls).parameters.get(name)
    except Exception:  # noqa: BLE001 - annotations that do not resolve say nothing
        return False
    ann = p.annotation if p is not None else None
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(ann) if a is not type(None)]
        ann = rest[0] if len(rest) == 1 else None
    return isinstance(ann, type) and issubclass(ann, nn.Module)


def _gather(m: nn.Module) -> nn.Sequential | None:
    kids: OrderedDict[str, nn.Module] = OrderedDict(m.named_children())
    return nn.Sequential(kids) if len(kids) >= 2 else None


def gathered(module: nn.Module, name: str) -> list[Any]:
    """Readings for a module parameter ``name`` of ``module`` that no attribute holds: the
    module's own children gathered under their names, then each child's."""
    if not takes_module(original_class(type(module)), name):
        return []
    out = [_gather(m) for m in [module, *module.children()]]
    return [g for g in out if g is not None]
