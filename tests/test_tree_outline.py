"""Tests for torchxray._tree.outline: a big model's first tree state, from the walk alone.

The outline must agree with the full tree on everything it shows (paths, names, classes, child
counts, marks), read no tensor (the lazy pass has not run after it), and fold runs of siblings
only where the full tree folds them or a coarser run that contains them (structure alone cannot
tell Linear(8, 16) from Linear(16, 8)).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from fixtures.models import ALL_BUILDERS
from fixtures.real import ENTRIES, build
from torch import nn

from torchxray._view import serialize as ser
from torchxray.tree import ModelTree, walk


def _outlined(model: nn.Module) -> tuple[ModelTree, Any]:
    tree = walk(model)
    outline = tree.outline()
    assert outline is not None
    return tree, outline


def _strip(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "params"}


def _runs_within(fine: list[tuple[int, int]], coarse: list[tuple[int, int]]) -> bool:
    """Every run of `fine` lies inside one run of `coarse` (both cover the same children)."""
    ends = {s: s + c for s, c in coarse}
    starts = sorted(ends)
    for s, c in fine:
        home = max(x for x in starts if x <= s)
        if s + c > ends[home]:
            return False
    return True


def _check(model: nn.Module) -> None:
    tree, outline = _outlined(model)
    rows = ser.RowMaker(None, None)
    first = ser.first_state(outline, rows, 3)
    assert tree._lazy.late is None  # the outline read no tensor: the lazy pass has not run
    assert first["outline"] is True and "params" not in first["root"]
    full = ser.first_state(tree, rows, 3)
    assert "outline" not in full and full["root"]["params"] == tree.root.params_total
    assert _strip(dict(first["root"])) == _strip(dict(full["root"]))
    for node in tree.nodes:
        sketch = outline[node.path]
        for field in ("path", "name", "cls", "children", "aliases", "parent", "hooks"):
            assert getattr(sketch, field) == getattr(node, field), (node.path, field)
        for field in ("forward_patched", "is_custom", "parametrizations", "wraps"):
            assert getattr(sketch, field) == getattr(node, field), (node.path, field)
        if node.children:
            coarse, fine = ser.folded(outline, node.path), ser.folded(tree, node.path)
            assert _runs_within(fine, coarse), node.path
            for start, count in coarse:  # each row of the outline is the full tree's, less counts
                if count == 1:
                    path = node.children[start]
                    got = rows.child_row(outline, path)
                    assert "params" not in got
                    assert got == _strip(dict(rows.child_row(tree, path)))


@pytest.mark.parametrize("name", sorted(ALL_BUILDERS))
def test_the_outline_agrees_with_the_tree(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(ALL_BUILDERS[name]())


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_the_outline_agrees_with_the_tree_of_real_models(name: str) -> None:
    _check(build(name)[0])


def test_alike_blocks_fold_in_the_outline_as_in_the_tree() -> None:
    blocks = nn.Sequential(
        *[nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.LayerNorm(8)) for _ in range(40)]
    )
    model = nn.Sequential(nn.Embedding(10, 8), blocks, nn.Linear(8, 10))
    tree, outline = _outlined(model)
    assert ser.folded(outline, "1") == [(0, 40)]
    first = ser.first_state(outline, ser.RowMaker(None, None), 0)
    fold = first["pages"]["1"]["items"][0]
    assert fold == {"fold": 40, "parent": "1", "start": 0, "cls": "Sequential"} | {
        "first": "1.0",
        "last": "1.39",
    }
    assert ser.folded(tree, "1") == [(0, 40)]
    assert first["pages"] == {
        p: {**page, "items": [_strip(dict(i)) for i in page["items"]]}
        for p, page in ser.first_state(tree, ser.RowMaker(None, None), 0)["pages"].items()
    }


def test_a_run_alike_in_structure_only_folds_in_the_outline_and_splits_in_the_tree() -> None:
    model = nn.Sequential(nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 8))
    tree, outline = _outlined(model)
    assert ser.folded(outline, "") == [(0, 3)]
    assert ser.folded(tree, "") == [(0, 1), (1, 1), (2, 1)]


def test_child_names_and_classes_tell_structures_apart() -> None:
    def block(act: type[nn.Module], name: str = "act") -> nn.Module:
        b = nn.Module()
        b.fc = nn.Linear(4, 4)
        b.add_module(name, act())
        return b

    model = nn.Sequential(block(nn.ReLU), block(nn.ReLU), block(nn.GELU), block(nn.ReLU, "other"))
    _, outline = _outlined(model)
    sigs = [outline[p].signature for p in ("0", "1", "2", "3")]
    assert sigs[0] == sigs[1] and len(set(sigs)) == 3


def test_an_alias_path_shows_as_an_alias_row() -> None:
    shared = nn.Linear(4, 4)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    tree, outline = _outlined(model)
    row = ser.RowMaker(None, None).child_row(outline, "2")
    assert row["path"] == "2" and row["alias_of"] == "0" and row["marks"][0] == "alias"
    assert outline["2"] is outline["0"]
    with pytest.raises(KeyError, match="'9'"):
        outline["9"]


def test_no_outline_once_the_tree_has_read_its_tensors() -> None:
    tree = walk(nn.Sequential(nn.Linear(2, 2)))
    assert tree.root.params_total == 6
    assert tree.outline() is None  # the Nodes are there: they say more, as quickly


def test_the_outline_reads_no_tensor() -> None:
    class Watched(nn.Linear):
        def extra_repr(self) -> str:
            raise AssertionError("the outline must not read extra_repr")

    model = nn.Sequential(Watched(2, 2), nn.ReLU())
    tree, outline = _outlined(model)
    ser.first_state(outline, ser.RowMaker(None, None), 0)
    assert tree._lazy.late is None
