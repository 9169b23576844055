"""Freeze / unfreeze entries of the patch log: which parameters they flip, and their replay code.

A freeze changes no module, only ``requires_grad`` flags, so its undo record is the flag every
parameter had before (`Flags`), not a slot swap. A parameter shared by several modules (tied
embeddings) is flipped once. Integer parameters cannot require gradients: unfreeze leaves them
alone, as the replayed code does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch

from .paths import SlotIndex


@dataclass(frozen=True, slots=True)
class Flags:
    """The parameters an entry flipped, with their flags before and after."""

    params: tuple[torch.Tensor, ...]
    before: tuple[bool, ...]
    after: tuple[bool, ...]


def plan(
    index: SlotIndex, paths: Iterable[str] | str, requires_grad: bool
) -> tuple[tuple[str, ...], Flags]:
    """The paths (deduplicated, as given) and the flags to set; errors change nothing."""
    op = "unfreeze" if requires_grad else "freeze"
    wanted = [paths] if isinstance(paths, str) else list(paths)
    if not wanted:
        raise ValueError(f"{op}() got no paths: the selection matched nothing")
    params: dict[int, torch.Tensor] = {}
    for path in dict.fromkeys(wanted):
        if not isinstance(path, str):
            raise TypeError(f"{op}() takes dotted module paths like 'layer1.0', got {path!r}")
        for p in index.module(path).parameters():
            if requires_grad and not (p.is_floating_point() or p.is_complex()):
                continue  # torch refuses gradients for integer tensors
            params.setdefault(id(p), p)
    if not params:
        where = ", ".join(repr(p) for p in wanted[:4])
        raise ValueError(f"{op}(): no parameters under {where}; nothing to {op}")
    found = tuple(params.values())
    flags = Flags(found, tuple(p.requires_grad for p in found), (requires_grad,) * len(found))
    return tuple(dict.fromkeys(wanted)), flags


def apply(flags: Flags | None, undo: bool = False) -> None:
    """Set every flag (``before`` when undoing); a failure puts back those already set. None (an
    entry that changed modules, not flags) sets nothing."""
    if flags is None:
        return
    values = flags.before if undo else flags.after
    done: list[tuple[torch.Tensor, bool]] = []
    try:
        for p, value in zip(flags.params, values):
            done.append((p, p.requires_grad))
            p.requires_grad_(value)
    except BaseException:
        for p, value in reversed(done):
            p.requires_grad_(value)
        raise


def title(entry_id: int, op: str, paths: tuple[str, ...], flags: Flags) -> str:
    where = ", ".join(p or "(model)" for p in paths[:4])
    if len(paths) > 4:
        where += f" and {len(paths) - 4} more"
    flipped = sum(b != a for b, a in zip(flags.before, flags.after))
    n = len(flags.params)
    return f"{entry_id}. {op} {where}: {n} parameter{'s' if n != 1 else ''} ({flipped} changed)"


def code(heading: str, paths: tuple[str, ...], requires_grad: bool) -> str:
    """Replay: the same flag on every parameter under the same paths of a fresh model."""
    test = "p.is_floating_point() or p.is_complex()"
    body = (
        f"        if {test}:\n            p.requires_grad_(True)\n"
        if requires_grad
        else "        p.requires_grad_(False)\n"
    )
    return (
        f"# {heading}\nfor path in {list(paths)!r}:\n"
        f"    for p in model.get_submodule(path).parameters():\n{body}"
    )
