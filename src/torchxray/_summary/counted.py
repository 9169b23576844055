"""The "Param #" column when the model shares: each parameter tensor counted once, at the first
row (pre-order) that holds it, so that the column adds up to the total.

A module reached by two paths, or a tensor tied between two modules (a decoder's weight that is
the word embeddings'), would otherwise count again in every collapsed row whose subtree holds it
(a Sequential at depth 1 reaching a Linear its sibling holds too: 220 for a model of 110). A row
whose tensors were partly counted above keeps only the rest and says how many it left out
(``Row.shared``), so the text can mark it.

    >>> import torch.nn as nn
    >>> from torchxray import walk
    >>> lin = nn.Linear(10, 10)
    >>> model = nn.Sequential(nn.Sequential(lin, nn.ReLU()), nn.Sequential(lin))
    >>> tree = walk(model)
    >>> book = Counted.of(tree)
    >>> book.take(["0"], own_only=False), book.take(["1"], own_only=False)
    ((110, 0), (0, 110))
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._tree.totals import packed_tensors, tensor_cost

if TYPE_CHECKING:
    from ..tree import ModelTree

__all__ = ["Counted"]


class Counted:
    """The tensors the rows above have counted, by identity (one book per summary)."""

    def __init__(self, tree: ModelTree) -> None:
        self._tree = tree
        self._seen: set[object] = set()

    @classmethod
    def of(cls, tree: ModelTree) -> Counted | None:
        """A book for a model that shares modules or tensors; None for the rest, whose column
        is exact from the walk's counts alone (no tensor read)."""
        nodes = tree.nodes
        if any(n.aliases for n in nodes):
            return cls(tree)
        if sum(n.params_own for n in nodes) != tree.root.params_total:  # a tensor tied
            return cls(tree)
        return None

    def _tensors(self, path: str, own_only: bool) -> Iterator[tuple[object, Any]]:
        top = self._tree.module(path)
        for m in [top] if own_only else top.modules():
            for p in m._parameters.values():
                if p is not None:
                    yield id(p), p
            # A quantized layer unpacks new tensor objects on every read: keyed by the layer.
            for name, t in packed_tensors(m).items():
                yield (id(m), name), t

    def take(self, paths: list[str], own_only: bool) -> tuple[int, int]:
        """(parameters of these modules no row above counted, parameters they hold that one did)
        for the row of `paths` (a folded run: every block); the row counts the first figure."""
        # A tensor twice within the row (a bias the head and its decoder both hold) is one.
        mine = {key: t for path in paths for key, t in self._tensors(path, own_only)}
        new = shared = 0
        for key, t in mine.items():
            n = tensor_cost(t, True).params
            if key in self._seen:
                shared += n
            else:
                new += n
        self._seen.update(mine)
        return new, shared
