"""Source: a member of a dataclass argument that ``__init__`` hands on whole to a layer, read off
that layer's own form.

A model often takes one small config dataclass and hands it down unread to the blocks that use
it: ``LoRAClassifier(vocab, lora=LoRAConfig(targets=("q", "v", "o")))`` makes
``LoRAEncoderLayer(dim, heads, ff_mult, lora)``, whose attention reads ``lora.targets``. The
search reads such an argument member by member (``candidates/members.py``), and nothing of the
model's own code reads the member; the block's form holds the whole config it was given.
``handed_member(module, cls, name, child)`` offers, for a member field ``"lora.targets"``, the
member of the configs the layers it was handed to were built with (``passed.handed``: the
first such layer's form, within the form's budget).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from torch import nn

from ..field import Child
from .passed import handed
from .usage import Usage, usage

__all__ = ["handed_member"]


def handed_member(module: nn.Module, cls: type, name: str, child: Child | None) -> list[Any]:
    """The values of member ``name`` (``"param.member"``) in the configs the layers ``param``
    was handed to hold (see the module doc); [] where it was handed to none."""
    param, _, member = name.partition(".")
    if not member or "." in member or child is None:
        return []
    u = usage(cls, param)
    if not u.handed:
        return []
    out: list[Any] = []
    for whole in handed(module, Usage(handed=u.handed), child):
        if dataclasses.is_dataclass(whole) and not isinstance(whole, type):
            v = getattr(whole, member, None)
            if v is not None and v not in out:
                out.append(v)
    return out
