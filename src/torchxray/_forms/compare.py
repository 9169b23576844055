"""Does a rebuilt module match a live one? Same class, parameter and buffer names and shapes,
child classes in order, ``extra_repr`` (module by module, the whole subtree).

Forms use it to accept an inferred constructor value only when a meta-device build with it
matches the live module; tests use it to measure exact round-trips.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from .._text import short_repr

__all__ = ["mismatch", "structure"]


def _extra(m: nn.Module) -> str:
    try:
        return m.extra_repr()
    except Exception as e:  # noqa: BLE001 - an extra_repr that needs state a fresh build lacks
        return f"<extra_repr raised {type(e).__name__}>"


def structure(module: nn.Module) -> list[tuple[Any, ...]]:
    """One row per submodule (the module first): path, class, extra_repr, child classes, own
    parameter and buffer names with shapes."""
    rows: list[tuple[Any, ...]] = []
    for path, m in module.named_modules(remove_duplicate=False):
        params = tuple((n, tuple(p.shape)) for n, p in m._parameters.items() if p is not None)
        buffers = tuple((n, tuple(b.shape)) for n, b in m._buffers.items() if b is not None)
        children = tuple((n, type(c)) for n, c in m._modules.items() if c is not None)
        rows.append((path, type(m), _extra(m), children, params, buffers))
    return rows


def mismatch(live: nn.Module, built: nn.Module) -> str | None:
    """None when ``built`` matches ``live``; else the first difference, in words."""
    a, b = structure(live), structure(built)
    for ra, rb in zip(a, b):
        if ra == rb:
            continue
        where = ra[0] or "(the module)"
        labels = ("path", "class", "extra_repr", "children", "parameters", "buffers")
        for label, x, y in zip(labels, ra, rb):
            if x != y:
                return f"{where}: {label} differ: {short_repr(x, 120)} vs {short_repr(y, 120)}"
    if len(a) != len(b):
        return f"{len(a)} submodules vs {len(b)}"
    return None
