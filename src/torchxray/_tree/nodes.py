"""The tree's records: `Node` (one distinct module), `HookInfo`, `BufferInfo`, and the builder
the walk fills in place (`_Builder`, `NODE_FIELDS`, `plain_leaf`). `tree.py` re-exports them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .facts import class_facts

__all__ = ["ALIASES", "NODE_FIELDS", "TRAINING", "BufferInfo", "HookInfo", "Node", "plain_leaf"]


@dataclass(frozen=True, slots=True)
class HookInfo:
    kind: str  # forward_pre / forward / backward_pre / backward
    name: str  # the hook callable's name ("log_forward", "Owner.method", "partial(f)", "<lambda>")
    id: int  # key in the module's hook dict (the handle's id)


@dataclass(frozen=True, slots=True)
class BufferInfo:
    name: str
    shape: tuple[int, ...] | None  # None while uninitialised (lazy modules)
    dtype: str
    device: str
    persistent: bool


@dataclass(frozen=True, slots=True)
class Node:
    """One distinct module. Totals, devices and dtypes cover the whole subtree (this module and
    everything below it), counting a tensor or module reached by several paths once; `*_own`
    fields cover this module's own tensors only. `children` are the paths through this module
    (a child that is shared elsewhere resolves, via `ModelTree[path]`, to its single Node).

    Attributes:
        path: Dotted path as in `model.named_modules()` (``""`` for the root).
        name: The last part of the path (the attribute name in its parent).
        cls: The class name (a parametrized class's original name).
        qualname: The class's module and qualified name, e.g. ``torch.nn.modules.conv.Conv2d``.
        children: The paths of the direct children, in registration order.
        aliases: Other paths that reach this same module object.
        parent: The parent's path; None for the root.
        depth: 0 for the root, 1 for its children, ...
        params_own: Parameters held by this module itself (elements).
        params_total: Parameters of the whole subtree, each tensor counted once.
        trainable_total: Of those, the ones with `requires_grad`.
        bytes_total: Bytes of the subtree's parameters and buffers as stored.
        buffers: This module's own buffers (`BufferInfo`: name, shape, dtype, device, persistent).
        devices: The devices the subtree's tensors live on, e.g. ``("cpu",)``.
        dtypes: Their dtypes, e.g. ``("float32",)``.
        training: The module's train/eval flag.
        hooks: Hooks registered on this module (`HookInfo`: kind, name, id).
        forward_patched: True when the instance's `forward` is not its class's.
        is_custom: True for a class outside torch (the user's or a library's).
        extra_repr: The module's `extra_repr()` (its hyperparameters, as its repr shows them).
        container: ``"Sequential"``, ``"ModuleList"`` or ``"ModuleDict"``; None otherwise.
        signature: A digest of the subtree's structure: identical blocks share it.
        parametrizations: Names of the tensors `torch.nn.utils.parametrize` computes.
        wraps: The path of the module a wrapper holds (`torch.compile`, DataParallel, DDP).
        index: Position in `ModelTree.nodes` (pre-order).
        size: Distinct modules in this subtree, this one included.
        trainable_own: This module's own trainable parameters.
        bytes_own: Bytes of this module's own tensors.
        params_exact: False when the subtree holds uninitialised (lazy) parameters.
        placement: Where the subtree's tensors live: ``"cpu"``, ``"cuda:0"``,
            ``"offloaded: disk (runs on cpu)"``, ``"DTensor Shard(0) on mesh (4,)"``...
        bytes_local: `bytes_total` as this process holds it (a DTensor's local shard only).

    Examples:
        >>> import torch.nn as nn, torchxray as tx
        >>> node = tx.walk(nn.Sequential(nn.Linear(4, 8)))["0"]
        >>> node.path, node.cls, node.params_own, node.devices, node.placement
        ('0', 'Linear', 40, ('cpu',), 'cpu')
    """

    path: str
    name: str
    cls: str
    qualname: str
    children: tuple[str, ...]
    aliases: tuple[str, ...]
    parent: str | None
    depth: int
    params_own: int
    params_total: int
    trainable_total: int
    bytes_total: int
    buffers: tuple[BufferInfo, ...]
    devices: tuple[str, ...]
    dtypes: tuple[str, ...]
    training: bool
    hooks: tuple[HookInfo, ...]
    forward_patched: bool
    is_custom: bool
    extra_repr: str
    container: str | None
    signature: str
    parametrizations: tuple[str, ...]
    wraps: str | None
    index: int  # position in ModelTree.nodes (pre-order)
    size: int  # distinct modules in this subtree, this one included (canonical placement)
    trainable_own: int
    bytes_own: int
    params_exact: bool  # False when the subtree holds uninitialised (lazy) parameters
    # Where the subtree's tensors live: "cpu", "cuda:0", "offloaded: disk (runs on cpu)",
    # "DTensor Shard(0) on mesh (4,); FSDP unit 'layers.0'" (see _tree.placement).
    placement: str
    bytes_local: int  # bytes_total as one rank holds it: a DTensor counts its local shard only


# Nodes are built on a mutable twin with the identical slot layout, filled in place (totals and
# signatures are known only bottom-up), then switched to the frozen class. A frozen dataclass's
# __init__ of 29 fields costs many times this, which matters at 100,000 modules.
_Builder: Any = dataclasses.make_dataclass(
    "_Builder", [(f.name, f.type) for f in dataclasses.fields(Node)], slots=True
)
NODE_FIELDS = tuple(f.name for f in dataclasses.fields(Node))
ALIASES, TRAINING = NODE_FIELDS.index("aliases"), NODE_FIELDS.index("training")


def plain_leaf(
    path: str,
    i: int,
    modules: Any,
    parents: list[int],
    records: list[Any],
    trainings: bytearray,
    known: dict[type, Any],
) -> tuple[Any, ...]:
    """The Node field values of a plain leaf, recorded by the walk as its path alone: a module
    without children, buffers, hooks or a patched forward, not a ScriptModule, whose other
    fields follow from its class, its parent's record and its training flag (lazy fields
    are left at their defaults, as for every record)."""
    cls = type(modules[i])
    facts = known.get(cls)
    if facts is None:
        facts = known[cls] = class_facts(cls)
    p = parents[i]
    if p < 0:
        ppath, depth, name = None, 0, path
    else:
        parent = records[p]  # a builder or Node: modules with children always have one
        ppath, depth = parent.path, parent.depth + 1
        name = path[len(ppath) + 1 :] if ppath else path
    return (
        path, name, facts.name, facts.qualname, (), (), ppath, depth, 0, 0, 0, 0, (), (), (),
        bool(trainings[i]), (), False, facts.is_custom, "", facts.container, "", (), None, i,
        1, 0, 0, True, "", 0,
    )  # fmt: skip
