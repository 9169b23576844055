"""A value the search moves a field to whose build fails a divisibility check ("dim must be
divisible by heads", torch's own "embed_dim must be divisible by num_heads"): the check ties
two whole numbers, one of which is still at a value that divides nothing. Moving one field alone
never passes it (a hand-written ViT's defaults of width 768 and 12 heads, built at width 32 and
depth 2 with 4 heads: neither width 32 nor depth 2 builds beside 12 heads, and 4 heads build only
at a width they divide). ``partners`` gives the moved value with each candidate of a whole-number
field the message names (``heads``; ``cfg.n_heads`` by its last part, ``num_heads`` naming
``heads``), a few builds in all; ``loop.py`` tries them where the moved value alone fails so.

Why the message and not the check's code: the check sits in a layer the constructor hands both
values to (an attention block's ``assert dim % heads == 0``) or in torch's own layer, written as
a product (``head_dim * num_heads == embed_dim``); the message names the values wherever it
sits, and the builds prove the pair. Where it names no field, nothing is tried.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..field import Field

__all__ = ["partners", "with_partner"]

_DIVISIBLE = re.compile(r"divisib|multiple of|divide", re.IGNORECASE)
MAX_PAIRS = 4  # builds per value that fails a divisibility check
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _named(field: str, words: set[str]) -> bool:
    """Whether the message names the field: its last part as a word, or inside one
    (``heads`` in ``num_heads``), three letters at least."""
    last = field.rpartition(".")[2].lower()
    return len(last) >= 3 and any(last == w or (len(w) > len(last) and last in w) for w in words)


def partners(
    error: str,
    name: str,
    value: Any,
    values: dict[str, Any],
    pools: dict[str, list[Any]],
    fields: Iterable[Field],
) -> list[dict[str, Any]]:
    """Changes ``{name: value, other: v}`` that may pass the divisibility check ``error``
    reports (see the module doc); none where ``error`` is no such check."""
    if not _DIVISIBLE.search(error):
        return []
    words = {w.lower() for w in _WORD.findall(error)}
    out: list[dict[str, Any]] = []
    for f in fields:
        now = values.get(f.name)
        if f.name == name or type(now) is not int or not _named(f.name, words):
            continue
        for v in pools.get(f.name, ()):
            if type(v) is int and v > 0 and v != now:
                out.append({name: value, f.name: v})
                if len(out) >= MAX_PAIRS:
                    return out
    return out


def with_partner(search: Any, name: str, c: Any, best: Any) -> Any:
    """The step of ``search`` (``loop.Search``) where ``c`` for ``name`` failed a divisibility
    check: ``c`` with another field moved to a value that passes it, where that builds and scores
    better than ``best``; None else, and while nothing builds yet (``best`` None): there a check
    failed by a field still at its default is no sign the moved one is right (torchvision's ViT
    encoder: ``attention_dropout`` moved beside ``num_heads`` at 1 built, and led nowhere)."""
    if best is None:
        return None
    for pair in partners(search.error, name, c, search.values, search.pools, search.searched):
        if search.tried(pair) or search._late():
            continue
        got = search.build({**search.values, **pair})
        if got is not None and (best is None or got.score < best.score):
            return (pair, got)
    return None
