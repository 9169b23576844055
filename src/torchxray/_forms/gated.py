"""A layer only the build has, made from a width a field holds: the guide's proposal that the
field was None (``_forms/guide.py``). Constructors make a layer only when its width is given
(``if temb_channels is not None: self.time_emb_proj = nn.Linear(temb_channels, ...)``), and
callers pass None where the annotation says ``int``: None is proposed for a required field too,
and the build decides."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .exact import Difference
from .field import Field

__all__ = ["unset_width"]

_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")


def unset_width(
    d: Difference, fields: list[Field], values: dict[str, Any]
) -> Iterator[tuple[str, Any]]:
    """None for each number field whose value is one of the widths of a layer only the build
    has (``Linear(in_features=64, ...)`` added, ``temb_channels=64``)."""
    if d.aspect != "module" or d.live is not None or d.built is None:
        return
    widths = {int(x) for x in _INT.findall(d.built)}
    for f in fields:
        v = values.get(f.name)
        if type(v) is int and v > 1 and v in widths and not f.name.startswith("num_"):
            yield f.name, None
