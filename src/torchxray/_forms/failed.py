"""What a failed build's message tells the search: the names it quotes. A constructor that rejects
a string often lists the ones it knows ("activation function  not found in ACT2FN mapping
['swish', 'silu', ...]"); each becomes a candidate of the string fields (``_forms/infer.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .field import Field

__all__ = ["learn"]

_QUOTED = re.compile(r"""['"]([A-Za-z_][\w.-]{0,40})['"]""")
MAX_NAMED = 8


def learn(
    error: str, fields: list[Field], pools: dict[str, list[Any]], fits: Callable[[Field, Any], bool]
) -> None:
    """Add the names ``error`` quotes to the candidates of each string field (in place)."""
    named = list(dict.fromkeys(_QUOTED.findall(error)))[:MAX_NAMED]
    for f in fields:
        if f.kind != "str" and not isinstance(f.value, str):
            continue
        new = [s for s in named if s not in pools[f.name] and fits(f, s)]
        pools[f.name][:0] = new
