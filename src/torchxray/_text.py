"""Text shared by every layer's messages: a value cut to a length (``short``, ``short_repr``) and the
closest known names for a misspelt one (``closest``), so that each message cuts and suggests alike.

    >>> short("a" * 80, 10)
    'aaaaaaa...'
    >>> short_repr(list(range(100)), 20)
    '[0, 1, 2, 3, 4, 5...'
    >>> closest("layer1.0.conv", ["layer1.0.conv1", "layer1.0.bn1", "fc"])
    ['layer1.0.conv1', 'layer1.0.bn1']
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

__all__ = ["closest", "short", "short_repr"]


def short(text: str, limit: int = 60, end: str = "...") -> str:
    """``text`` itself when it fits in ``limit`` characters, else cut so that it does, ending with
    ``end``."""
    return text if len(text) <= limit else text[: limit - len(end)] + end


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit``; a ``__repr__`` that raises gives ``<TypeName>`` instead, so
    a hostile object can never break the message that quotes it."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - any __repr__ can raise
        text = f"<{type(value).__name__}>"
    return short(text, limit)


def closest(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` of ``candidates`` that look like ``word``, best first (``difflib``'s ratio of at
    least 0.5, which keeps a one-letter typo and drops unrelated names)."""
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.5)
