"""Which traces a check runs, in which order: `plan(model, calls) -> [Group]`.

Modules the example inputs reached are grouped by class structure (`_fake.signatures`: equal for
interchangeable blocks) and by their first call's argument metadata (`_fake.memo.input_key`):
each group is traced once, on its first member, and what it finds holds for every member (24
identical decoder layers: one trace). Groups go deepest first, then in forward order, so every
child is checked (and can be stubbed, `_compile.stubs`) before its parent is traced.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from .._fake.memo import input_key
from .._fake.signatures import Signatures
from .capture import Captured

__all__ = ["Group", "plan", "depth"]


def depth(path: str) -> int:
    return 0 if not path else path.count(".") + 1


@dataclass
class Group:
    """Modules one trace answers for: `members` as (path, module), the first is traced."""

    key: Hashable
    members: list[tuple[str, nn.Module]] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.members[0][0]

    @property
    def module(self) -> nn.Module:
        return self.members[0][1]


def plan(model: nn.Module, calls: dict[int, Captured]) -> list[Group]:
    """The groups to trace, deepest first (see the module docstring)."""
    named = list(model.named_modules())
    paths = {id(m): p for p, m in named}
    signatures = Signatures(model, paths, [m for _, m in named])
    groups: dict[Hashable, Group] = {}
    for path, module in sorted(
        ((p, m) for p, m in named if id(m) in calls), key=lambda pm: calls[id(pm[1])].order
    ):
        call = calls[id(module)]
        key: Any = None
        # The relaxed signature and the block's cache index: decoder layers that differ only in
        # `layer_idx` and read their own slot of one cache are one group, as in the probe's memo.
        structure = signatures.relaxed.get(id(module), signatures.exact.get(id(module)))
        inputs = _inputs_key(call, signatures.index.get(id(module)))
        if structure is not None and inputs is not None:
            key = (type(module), structure, inputs)
        else:
            key = ("id", id(module))
        groups.setdefault(key, Group(key)).members.append((path, module))
    return sorted(groups.values(), key=lambda g: (-depth(g.path), calls[id(g.module)].order))


def _inputs_key(call: Captured, index: int | None) -> Hashable | None:
    try:
        found = input_key(call.args, call.kwargs, index)
        if found is None:
            return None
        hash(found[0])
    except Exception:  # noqa: BLE001 - an argument that cannot be keyed: its module traced alone
        return None
    return found[0]
