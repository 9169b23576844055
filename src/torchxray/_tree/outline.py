"""The tree before its lazy pass: what the walk alone knows of each module, for a first look.

On a big model the lazy pass (`_tree/lazy.py`: every tensor and `extra_repr` read) costs as much
as the walk itself. The Explorer shows this outline first (rows,
classes, marks, runs of alike siblings folded), then the full tree once the pass has run.

Folds here compare structure only: a leaf's class, and for a module with children its class,
child names and children's structure. `Node.signature` adds tensor shapes, dtypes and
`extra_repr`, so a run folded here may split in the full tree (e.g. ``Linear(8, 16)`` beside
``Linear(16, 8)``), never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .lazy import LazyPass
from .nodes import NODE_FIELDS, HookInfo, plain_leaf

__all__ = ["Outline", "Sketch"]

_FIELDS = (
    "path",
    "name",
    "cls",
    "children",
    "aliases",
    "parent",
    "hooks",
    "forward_patched",
    "is_custom",
    "parametrizations",
    "wraps",
)
_AT = tuple(NODE_FIELDS.index(f) for f in _FIELDS)


@dataclass(frozen=True, slots=True)
class Sketch:
    """A module as the walk saw it: the fields of `Node` that need no tensor, and a
    structural `signature` (equal for alike subtrees; see the module docstring)."""

    path: str
    name: str
    cls: str
    children: tuple[str, ...]
    aliases: tuple[str, ...]
    parent: str | None
    hooks: tuple[HookInfo, ...]
    forward_patched: bool
    is_custom: bool
    parametrizations: tuple[str, ...]
    wraps: str | None
    signature: str


class Outline:
    """`outline[path]` -> `Sketch`, for every path `ModelTree[path]` resolves directly (an
    alias path gives its module's canonical sketch). Built by `ModelTree.outline()`."""

    def __init__(
        self,
        records: list[Any],
        index: dict[str, int],
        modules: tuple[Any, ...],
        parents: list[int],
        trainings: bytearray,
        rest: LazyPass,
    ) -> None:
        self._records, self._index, self._modules = records, index, modules
        self._parents, self._trainings = parents, trainings
        self._known: dict[type, Any] = {}
        self._sketches: dict[int, Sketch] = {}
        # The full tree's signatures with each module's class for its head (see module docstring).
        self._sids = rest.sign(rest.classes, {})

    def __len__(self) -> int:
        return len(self._records)

    @property
    def root(self) -> Sketch:
        return self._sketch(0)

    def __getitem__(self, path: str) -> Sketch:
        i = self._index.get(path)
        if i is None:
            raise KeyError(f"no module at path {path!r} in the outline")
        return self._sketch(i)

    def _sketch(self, i: int) -> Sketch:
        got = self._sketches.get(i)
        if got is not None:
            return got
        r = self._records[i]
        if type(r) is str:  # a plain leaf (see nodes.plain_leaf)
            r = plain_leaf(
                r, i, self._modules, self._parents, self._records, self._trainings, self._known
            )
        if type(r) is tuple:
            values = [r[k] for k in _AT]
        else:  # a builder (module with children) or, once built, a Node
            values = [getattr(r, f) for f in _FIELDS]
        got = self._sketches[i] = Sketch(*[*values, str(self._sids[i])])
        return got
