"""How big an edit's rebuilt module would be, known before it is built: the form is built on the
meta device (no memory, milliseconds even for ``out_channels=10**8``), and an edit whose new
parameters and buffers pass ``limit()`` is refused until confirmed (``PatchLog.edit(...,
_confirm=True)``; the widget's "Build anyway")."""

from __future__ import annotations

import itertools
import os
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy

from .._forms.field import FormError
from .._forms.rebuild.meta import meta_build

__all__ = ["TooLarge", "check", "estimate", "limit"]

FLOOR = 1 << 30  # never ask below 1 GiB
SHARE = 0.25  # nor below a quarter of the memory still available


class TooLarge(FormError):
    """An edit whose rebuilt module would hold more than ``limit`` bytes; nothing was built. A
    ``FormError`` under the key "__confirm__", which the widget's form answers with "Build
    anyway"."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__({"__confirm__": message})
        self.size = size
        self.limit = limit


def available(device: torch.device | None = None) -> int | None:
    """Bytes still available on ``device`` (host memory for CPU), or None when unknown."""
    if device is not None and device.type == "cuda":
        try:
            return int(torch.cuda.mem_get_info(device)[0])
        except Exception:  # noqa: BLE001 - no driver / a device that does not answer
            return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def limit(device: torch.device | None = None) -> int:
    free = available(device)
    return max(FLOOR, int(free * SHARE)) if free is not None else FLOOR


def estimate(form: Any, changes: dict[str, Any]) -> int | None:
    """Bytes of the parameters and buffers ``form.build(**changes)`` would hold (shared tensors
    once), built on meta; None when the class cannot be built there."""
    meta = dict(changes)
    try:
        if form["device"].kind == "device":
            meta["device"] = torch.device("meta")  # an explicit device would beat the context
    except KeyError:
        pass
    try:
        with meta_build():  # on meta, weights never initialised
            module = form.build(**meta)
    except Exception:  # noqa: BLE001 - a constructor that needs real tensors: no estimate
        return None
    seen: dict[int, int] = {}
    for t in [*module.parameters(), *module.buffers()]:
        if not is_lazy(t):  # a lazy module's tensors have no size until its first call
            seen.setdefault(id(t), t.numel() * t.element_size())
    return sum(seen.values())


def gib(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def _ints(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, (tuple, list)):
        return [i for v in value for i in _ints(v)]
    return []


def grows(form: Any, changes: dict[str, Any]) -> bool:
    """Could the edit make the module much larger? Only by a number above every number the module
    has now (a width, a count, a kernel size), a dtype or a config (whose fields are widths): the
    other edits (a flag, an eps) are not estimated, which saves a meta build per edit."""
    top = max((i for v in form.values.values() for i in _ints(v)), default=0)
    for name, raw in changes.items():
        try:
            f = form[name]
            value = form.parse(name, raw) if isinstance(raw, str) and f.kind != "str" else raw
        except Exception:  # noqa: BLE001 - an unknown or unparsable value: build decides
            return True
        if f.kind in ("dtype", "config") or f.group or max(_ints(value), default=0) > top:
            return True
    return False


def check(form: Any, changes: dict[str, Any], old: nn.Module, path: str) -> None:
    """Raise ``TooLarge`` when rebuilding ``old`` (at ``path``) with ``changes`` would pass
    ``limit`` on the device it is on."""
    if not grows(form, changes):
        return
    size = estimate(form, changes)
    first = next(itertools.chain(old.parameters(), old.buffers()), None)
    cap = limit(first.device if first is not None else None)
    what = f"{type(old).__name__} at {path!r}"
    if size is not None and size > cap:
        asked = ", ".join(f"{k}={v}" for k, v in changes.items())
        raise TooLarge(
            f"{what} with {asked} would hold {gib(size)} of parameters and buffers, more than "
            f"{gib(cap)} (the larger of 1 GiB and a quarter of the memory available); check the "
            "values, or confirm: 'Build anyway' in the widget, PatchLog.edit(..., _confirm=True)",
            size,
            cap,
        )
