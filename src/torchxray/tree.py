"""`walk(model) -> ModelTree`: one frozen `Node` per distinct module object, in pre-order.

    >>> import torch.nn as nn
    >>> tree = walk(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
    >>> tree["0"].cls, tree["0"].params_total, tree.root.children
    ('Linear', 40, ('0', '1'))

Paths are dotted exactly as in `model.named_modules()`; `tree[path]` resolves every path that
`model.get_submodule(path)` accepts, including paths through a module registered twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch.nn as nn
from torch.nn.modules import module as _module_mod

from . import _gc
from ._text import closest
from ._tree.nodes import BufferInfo, HookInfo, Node, _Builder, plain_leaf
from ._tree.outline import Outline
from ._tree.walk import Walker, hook_infos

__all__ = ["BufferInfo", "HookInfo", "ModelTree", "Node", "walk"]


class _Lazy:
    """What the walk leaves for later (see _tree.lazy): run once, by the first Node built."""

    __slots__ = ("all", "known", "late", "rest")

    def __init__(self, rest: Any) -> None:
        self.rest = rest
        self.late: Any = None
        self.all: tuple[Node, ...] | None = None  # ModelTree.nodes, once every node is built
        self.known: dict[type, Any] = {}  # class facts for plain leaves (FACTS is weak, slower)

    def run(self) -> Any:
        was_enabled = _gc.pause()
        try:
            self.late = self.rest.run()
        finally:
            _gc.resume(was_enabled, as_old=True)
        self.rest = None
        return self.late


@dataclass(frozen=True, slots=True, eq=False)
class ModelTree:
    """Result of `walk()`; behaves like a read-only mapping from dotted path to `Node`.

    Nodes are built on first access (`tree[path]`, `tree.nodes`, iteration) from values
    collected by the walk, and then kept: the same path always gives the same Node object.
    The first Node built also reads every module's tensors and hyperparameters, for all nodes
    at once: counts, devices, dtypes, extra_repr and signatures (two thirds of a big model's
    walk otherwise) then show the model as it is at that first look.

    Attributes:
        global_hooks: Hooks registered for every module
            (`torch.nn.modules.module.register_module_forward_hook` and its kin).

    Examples:
        >>> import torch.nn as nn
        >>> tree = walk(nn.Sequential(nn.Linear(4, 8), nn.ReLU()))
        >>> len(tree), tree.root.cls, "0" in tree
        (3, 'Sequential', True)
        >>> [node.path for node in tree]
        ['', '0', '1']
        >>> tree.module("0")
        Linear(in_features=4, out_features=8, bias=True)
    """

    global_hooks: tuple[HookInfo, ...]  # torch.nn.modules.module.register_module_*_hook
    _records: list[Any] = field(repr=False)  # Node, or a node's field values not yet built
    _lazy: _Lazy = field(repr=False)
    _index: dict[str, int] = field(repr=False)
    _modules: tuple[nn.Module, ...] = field(repr=False)
    _parents: list[int] = field(repr=False)
    _trainings: bytearray = field(repr=False)

    @property
    def nodes(self) -> tuple[Node, ...]:
        """Every node, pre-order."""
        lazy = self._lazy
        if lazy.all is None:
            records, build = self._records, self._build
            for i, r in enumerate(records):
                if type(r) is not Node:
                    records[i] = build(i, r)
            lazy.all = tuple(records)
        return lazy.all

    def _node(self, i: int) -> Node:
        r = self._records[i]
        if type(r) is not Node:
            r = self._records[i] = self._build(i, r)
        return r  # type: ignore[no-any-return]

    def _build(self, i: int, record: Any) -> Node:
        # Leaves are plain tuples of field values (or, for plain leaves, their path), nodes
        # with children mutable twins (_Builder) with the same slots; all lack the late fields
        # until the lazy pass ran.
        lazy = self._lazy
        late = lazy.late or lazy.run()
        if type(record) is str:
            record = plain_leaf(
                record, i, self._modules, self._parents, self._records, self._trainings, lazy.known
            )
        b = _Builder(*record) if type(record) is tuple else record
        b.params_own = late.params_own[i]
        b.trainable_own = late.trainable_own[i]
        b.bytes_own = late.bytes_own[i]
        b.params_total = late.params_total[i]
        b.trainable_total = late.trainable_total[i]
        b.bytes_total = late.bytes_total[i]
        b.devices = late.devices[i]
        b.dtypes = late.dtypes[i]
        b.params_exact = late.exact[i]
        b.extra_repr = late.extra_repr[i]
        b.signature = late.digests[late.sids[i]]
        b.placement = late.placement[i]
        b.bytes_local = late.bytes_local[i]
        b.__class__ = Node
        return b  # type: ignore[no-any-return]

    @property
    def root(self) -> Node:
        """The model itself (path ``""``)."""
        return self._node(0)

    def outline(self) -> Outline | None:
        """What the walk alone knows of every module (`_tree/outline.py`: no counts, folds by
        structure), while no Node has been built; None after (the Nodes say more, at once)."""
        rest = self._lazy.rest
        if rest is None:
            return None
        was_enabled = _gc.pause()  # ~20,000 keys at 100,000 modules: see _gc.pause
        try:
            return Outline(
                self._records, self._index, self._modules, self._parents, self._trainings, rest
            )
        finally:
            _gc.resume(was_enabled, as_old=True)

    @property
    def unwrapped(self) -> Node:
        """The innermost module behind torch.compile / DataParallel / DDP wrappers (or the root)."""
        node = self.root
        while node.wraps is not None:
            node = self[node.wraps]
        return node

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Node]:
        # One node at a time: stopping early (e.g. the first 1,000 of 100,000) builds no more.
        if self._lazy.all is not None:
            return iter(self._lazy.all)
        return map(self._node, range(len(self._records)))

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._resolve(path)[0] is not None

    def __getitem__(self, path: str) -> Node:
        node, deepest = self._resolve(path)
        if node is None:
            raise KeyError(self._missing(path, deepest))
        return node

    def get(self, path: str, default: Node | None = None) -> Node | None:
        """The node at `path`, or `default` where there is none (`tree[path]` raises instead).

        Args:
            path: A dotted path as `model.get_submodule` takes it; ``""`` is the root.
            default: What to return for a path that names no module.

        Returns:
            The `Node`, or `default`.
        """
        node = self._resolve(path)[0]
        return default if node is None else node

    def children(self, path: str) -> tuple[Node, ...]:
        """The nodes of the module's direct children, in registration order.

        Args:
            path: The parent's dotted path.

        Returns:
            One `Node` per child path (a shared child resolves to its single Node).

        Raises:
            KeyError: No module at `path` (the message names the closest paths).
        """
        return tuple(self[c] for c in self[path].children)

    def module(self, path: str) -> nn.Module:
        """The live module object at `path` (the model itself is never copied).

        Args:
            path: A dotted path; ``""`` is the model.

        Returns:
            The `nn.Module` object itself, as `model.get_submodule(path)` returns it.

        Raises:
            KeyError: No module at `path` (the message names the closest paths).
        """
        return self._modules[self[path].index]

    def __repr__(self) -> str:
        return f"ModelTree(root={self.root.cls}, nodes={len(self)})"

    def _resolve(self, path: str) -> tuple[Node | None, Node]:
        """(node or None, deepest node reached). Paths through a shared module (e.g. "b.x" where
        "b" is an alias of "a") are resolved one component at a time, as get_submodule does."""
        if not isinstance(path, str):
            raise TypeError(
                f"tree paths are dotted strings as in model.named_modules(), e.g. 'layer1.0'; "
                f"got {type(path).__name__} {path!r}"
            )
        i = self._index.get(path)
        if i is not None:
            node = self._node(i)
            return node, node
        node = self.root
        for part in path.split("."):
            j = self._index.get(f"{node.path}.{part}" if node.path else part)
            if j is None:
                return None, node
            node = self._node(j)
        return node, node

    def _missing(self, path: str, deepest: Node) -> str:
        if len(self._index) <= 20_000:
            candidates = list(self._index)
        else:  # difflib over every path is slow past that: look near where resolution stopped
            siblings = self[deepest.parent].children if deepest.parent is not None else ()
            candidates = [deepest.path, *deepest.children, *siblings]
        close = closest(path, candidates)
        if not close:
            close = list(deepest.children[:3]) or [deepest.path]
        hint = ", ".join(repr(c) for c in close)
        return (
            f"no module at path {path!r} in this {self.root.cls}; closest existing paths: {hint}. "
            "Paths are dotted as in model.named_modules(); '' is the root."
        )


def walk(model: nn.Module) -> ModelTree:
    """Walk `model` once and return its `ModelTree`. Never runs the model, moves it or changes it.

    One `Node` per distinct module object, in pre-order (the order of `model.named_modules()`);
    a module registered under two paths is one node with `aliases`. Counts, devices and dtypes are
    read on the first look at any node, for all of them at once.

    Args:
        model: A built `torch.nn.Module` (not its class).

    Returns:
        The `ModelTree`, a read-only mapping from dotted path to `Node`.

    Raises:
        TypeError: `model` is not an `nn.Module` instance.

    Examples:
        >>> import torch.nn as nn
        >>> tree = walk(nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8)))
        >>> node = tree["1"]
        >>> node.cls, node.params_total, node.parent, node.training
        ('BatchNorm2d', 16, '', True)
    """
    if not isinstance(model, nn.Module):
        what = f"the class {model.__name__}" if isinstance(model, type) else type(model).__name__
        raise TypeError(
            f"walk() expects a torch.nn.Module instance, got {what}. "
            "Pass a built model, e.g. walk(MyModel()) rather than walk(MyModel)."
        )
    was_enabled = _gc.pause()
    try:
        records, index, modules, parents, trainings, rest = Walker(_Builder).run(model)
        # Hooks registered for every module (torch.nn.modules.module.register_module_*_hook).
        global_hooks = hook_infos(_module_mod, prefix="_global")
        lazy = _Lazy(rest)
        return ModelTree(global_hooks, records, lazy, index, tuple(modules), parents, trainings)
    finally:
        _gc.resume(was_enabled, as_old=True)
