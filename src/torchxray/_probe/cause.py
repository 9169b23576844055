"""When a probe fails after the model was patched: which patch the failure follows, as a hint.

After ``log.edit("conv1", out_channels=64)`` the probe fails in ``bn1``: the inputs did not
change, the edit did. The hint then names the edit ("conv1 was edited to out_channels=64 (was
96); bn1 receives its output (1x64x8x8) and still has num_features=96 ...") instead of telling
the user to check the example inputs. A patch counts when the failing module is at or inside a
patched path, when the call that completed just before it ran at or inside one, or, failing
that, when a patched module ran earlier in the same forward; the hint says "receives its output"
when the failing call's first input has the shape of a tensor the patched call returned.

The entries are read by attribute (``op``, ``paths``, ``changes``, ``old_cls``, ``new_cls``: a
`torchxray.PatchEntry`), so the probe does not import the patch engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from torch import nn

__all__ = ["entries_of", "patch_hint"]

_STALE_SHOWN = 2


def entries_of(patches: Any) -> tuple[Any, ...]:
    """The applied entries of a `PatchLog` (its ``entries``) or of an iterable of entries."""
    if patches is None:
        return ()
    entries = getattr(patches, "entries", patches)
    if not isinstance(entries, Iterable):
        raise TypeError(
            "probe(patch_log=...) takes a torchxray.PatchLog or its entries, "
            f"got {type(patches).__name__}"
        )
    return tuple(e for e in entries if getattr(e, "paths", None) is not None)


def _owner(patched: dict[str, Any], path: str) -> str | None:
    """The patched path that `path` is at or inside (the longest), or None."""
    probe = path
    while probe not in patched:
        if not probe:
            return None
        probe = probe.rpartition(".")[0]
    return probe


def _where(path: str) -> str:
    return path or "the model (root)"


def _describe(path: str, entry: Any) -> str:
    changes: dict[str, tuple[Any, Any]] = getattr(entry, "changes", None) or {}
    if entry.op == "edit" and changes:
        new = ", ".join(f"{k}={v[1]!r}" for k, v in changes.items())
        old = ", ".join(
            f"{v[0]!r}" if len(changes) == 1 else f"{k}={v[0]!r}" for k, v in changes.items()
        )
        return f"{_where(path)} was edited to {new} (was {old})"
    if entry.old_cls != entry.new_cls:
        return f"{_where(path)} was replaced ({entry.old_cls} -> {entry.new_cls})"
    return f"{_where(path)} was replaced by a new {entry.new_cls}"


def _tokens(name: str) -> set[str]:
    return {t for t in name.replace(".", "_").split("_") if len(t) > 2}


def _stale(module: nn.Module | None, entry: Any) -> list[str]:
    """The failing module's own hyperparameters that still hold a value the patch changed:
    ``num_features=96`` after conv1 went from 96 to 64 output channels. Small values (heads,
    kernel sizes) count only for an attribute whose name shares a word with the changed field,
    since a 4 elsewhere is most often a coincidence."""
    changes: dict[str, tuple[Any, Any]] = getattr(entry, "changes", None) or {}
    olds = {
        v[0]: _tokens(k)
        for k, v in changes.items()
        if type(v[0]) is int and v[0] != v[1] and v[0] not in (0, 1)
    }
    if module is None or not olds:
        return []
    found = []
    for name, value in vars(module).items():
        if name.startswith("_") or name == "training":
            continue
        if type(value) is tuple and len(value) == 1:
            value = value[0]
        if type(value) is int and value in olds and (value >= 8 or olds[value] & _tokens(name)):
            found.append(f"{name}={value!r}")
    return found[:_STALE_SHOWN]


def _shapes(leaves: Any) -> list[tuple[int, ...]]:
    return [tuple(leaf.shape) for leaf in leaves if hasattr(leaf, "shape")]


def _passed_on(producer: Any, consumer: Any) -> str:
    """The shape, as text, of a tensor the patched call returned and the failing call received
    first; "" when none matches (or the calls do not say)."""
    try:
        made = _shapes(producer.output_leaves())
        got = _shapes(consumer.input_leaves()) if consumer is not None else []
    except AttributeError:
        return ""
    if got and got[0] in made:
        return "x".join(map(str, got[0])) or "scalar"
    return ""


def patch_hint(
    entries: Sequence[Any], path: str, module: nn.Module | None, calls: Sequence[Any]
) -> str:
    """The hint naming the patch a failure in `path` follows, or "" when none applies. `calls`
    are the run's calls in call order (``path`` and ``done``), the failing one among them."""
    patched: dict[str, Any] = {}
    for entry in entries:
        for p in entry.paths:
            patched[p] = entry  # a later patch of the same path is the one that stands
    if not patched:
        return ""
    here = _owner(patched, path)
    if here is not None:
        return (
            f"{_describe(here, patched[here])}, and the error is raised inside it: its new "
            "hyperparameters do not fit what it receives or how it is used. Change them or undo "
            "the patch; the example inputs are not the cause"
        )
    failing = next(
        (i for i in range(len(calls) - 1, -1, -1) if calls[i].path == path and not calls[i].done),
        len(calls),
    )
    before = [c for c in calls[:failing] if c.done]
    owners = [_owner(patched, c.path) for c in before]
    who = _where(path)
    at = next((o for o in reversed(owners) if o is not None), None)
    if at is None:
        return ""
    relation = "runs right after it" if owners[-1] is not None else "runs later in the same forward"
    produced = next(c for c, o in zip(reversed(before), reversed(owners)) if o == at)
    shape = _passed_on(produced, calls[failing] if failing < len(calls) else None)
    if shape:
        relation = f"receives its output ({shape})"
    entry = patched[at]
    stale = _stale(module, entry)
    still = f" and still has {', '.join(stale)}" if stale else ""
    return (
        f"{_describe(at, entry)}; {who} {relation}{still}: it was built for the old values. "
        f"Edit {who} to match (or undo the patch); the example inputs are not the cause"
    )
