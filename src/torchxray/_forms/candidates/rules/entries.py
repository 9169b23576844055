"""Entries: an attribute holding a dict or an object of values whose entries differ.

Each entry that differs goes, by its key, to the field named for it (the parts' text of such an
attribute is ``Class{...}``, read as a dict). Example: torchvision's detection ``RoIHeads``, whose
``box_coder`` (a ``BoxCoder``, no module) holds ``weights``: they go to ``bbox_reg_weights``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tuning import MAX_PER_DIFF
from .problem import Problem, named, parse_literal

__all__ = ["propose"]


def _entries(p: Problem) -> list[tuple[str, Any]]:
    """(key, live value) of the entries that differ."""
    d = p.diff
    if not d.aspect.startswith("attr ") or d.live is None or d.built is None:
        return []
    got: list[dict[Any, Any]] = []
    for text in (d.live, d.built):
        body = text[text.find("{") :] if "{" in text and text.endswith("}") else ""
        value = parse_literal(body) if body else None
        if not isinstance(value, dict):
            return []
        got.append(value)
    live, built = got
    return [
        (k, v)
        for k, v in live.items()
        if isinstance(k, str) and (k not in built or built[k] != v or type(built[k]) is not type(v))
    ]


def propose(p: Problem) -> Iterator[dict[str, Any]]:
    for key, value in _entries(p)[:MAX_PER_DIFF]:
        for f in p.fields:
            if named(f, key):
                yield {f.name: value}
