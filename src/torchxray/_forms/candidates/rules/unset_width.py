"""Unset width: a layer only the build has, made from a width a field holds.

Constructors make a layer only when its width is given (``if temb_channels is not None:
self.time_emb_proj = nn.Linear(temb_channels, ...)``), and callers pass None where the annotation
says ``int``: None is proposed for each number field whose value is one of the added layer's
widths, a required field too, and the build decides. Example: diffusers' ``ResnetBlock2D`` of a
VAE (``temb_channels=None``) built with ``temb_channels=512`` makes a ``time_emb_proj``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .problem import Problem

__all__ = ["propose"]

_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    d = p.diff
    if d.aspect != "module" or d.live is not None or d.built is None:
        return
    widths = {int(x) for x in _INT.findall(d.built)}
    for f in p.fields:
        v = p.values.get(f.name)
        if type(v) is int and v > 1 and v in widths and not f.name.startswith("num_"):
            yield {f.name: None}
