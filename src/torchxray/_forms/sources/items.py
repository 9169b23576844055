"""Source: a sequence argument read back item by item off the layers its items were handed to.

A hand-written constructor makes one layer per item of a list: ``for i in range(len(cards)):
self.embeddings.append(nn.Embedding(cards[i], d))``, ``for n in cards``, ``for ch, k in
zip(channels, kernels)``, ``nn.Linear(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)``.
``usage.py`` notes where each item goes (``Usage.items_handed``: the layer's class, its
parameter, the attribute that keeps it, the item's offset against the loop's place); here the
layers of that class under that attribute are read in order (``getattr(layer, param)``: torch's
layers keep their arguments under their names; a kernel kept as ``(k, k)`` reads ``k``), and the
readings of one argument put together by their offsets (``sizes[i]`` and ``sizes[i + 1]`` make
``[in_0, in_1, ..., out_last]``), where they agree. Each reading is a candidate the rebuild checks.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from .usage import Handed, Usage

__all__ = ["items_of"]

MAX_ITEMS = 256  # a list longer than this is no per-layer list


def _value(layer: nn.Module, param: str) -> Any:
    try:
        v = getattr(layer, param, None)
    except Exception:  # noqa: BLE001 - a user's property that raises reads as nothing
        return None
    if isinstance(v, tuple) and v and all(x == v[0] for x in v):
        v = v[0]  # nn.Conv2d(c, n, k) keeps kernel_size=(k, k)
    return v if type(v) in (int, float) else None


def _read(module: nn.Module, h: Handed) -> list[Any] | None:
    root = getattr(module, h.kept, None) if h.kept else module
    if not isinstance(root, nn.Module):
        return None
    layers = [m for m in root.modules() if type(m) is h.callee and m is not module]
    if len(layers) > MAX_ITEMS:
        return None
    values = [_value(m, h.param) for m in layers]
    return values if values and all(v is not None for v in values) else None


def _joined(readings: list[tuple[int, list[Any]]]) -> list[Any] | None:
    """One list the readings are slices of, at their offsets (None where two disagree)."""
    low = min(o for o, _ in readings)
    out: dict[int, Any] = {}
    for offset, values in readings:
        for i, v in enumerate(values):
            at = i + offset - low
            if out.setdefault(at, v) != v:
                return None
    if sorted(out) != list(range(len(out))):
        return None
    return [out[i] for i in range(len(out))]


def items_of(module: nn.Module, u: Usage) -> list[list[Any]]:
    """The lists the argument's items read back to, the readings of all its uses joined first,
    then each use's alone."""
    readings: list[tuple[int, list[Any]]] = []
    by_layers: dict[str, list[tuple[int, list[Any]]]] = {}  # the readings of one attribute's
    for h in u.items_handed:
        values = _read(module, h)
        if values is not None and (h.offset, values) not in readings:
            readings.append((h.offset, values))
            by_layers.setdefault(h.kept, []).append((h.offset, values))
    if not readings:
        return []
    out: list[list[Any]] = []
    joined = [_joined(readings)] if len(readings) > 1 else []
    # Where two stacks read the list in different orders (a decoder built back to front), the
    # readings of each stack joined alone.
    joined += [_joined(r) for r in by_layers.values() if 1 < len(r) < len(readings)]
    for values in [*joined, *(v for _, v in readings)]:
        if values is not None and values not in out:
            out.append(values)
    return out
