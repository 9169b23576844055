"""The rule grid_pair (``_forms/candidates/rules/grid_pair.py``) alone, on a hand-written class of
the zoo: a ViT written from scratch, whose ``image_size`` is unpacked by ``pair()`` into two sides
that only the count of patches shows."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

import torchxray as tx
from torchxray._forms.candidates.rules import grid_pair

pytestmark = pytest.mark.usefixtures("roomy_form_budget")

LIVE = dict(image_size=(16, 24), patch_size=8, num_classes=5, dim=16, depth=2, heads=2,
            mlp_dim=32, dim_head=8, dropout=0.1, pool="mean")  # fmt: skip


def test_the_sides_whose_patches_number_the_live_count_the_squarest_first() -> None:
    from tests.handwritten.attention import ViT

    got = proposed(grid_pair.propose, ViT, LIVE, {**LIVE, "image_size": 16})
    assert got[:2] == [{"image_size": (16, 24)}, {"image_size": (24, 16)}]
    assert rebuilds(ViT, LIVE, {**LIVE, "image_size": (24, 16)})  # only the count is known
    assert list(grid_pair.pairs(16, 16, 5, 7)) == [(16, 24), (24, 16), (8, 48), (48, 8)]


def test_the_form_is_exact_and_flags_the_sides_as_a_guess() -> None:
    from tests.handwritten import CASES

    f = tx.form(CASES["vit_from_scratch"].build())
    assert f.inexact == ""
    assert f["patch_size"].value == 8  # kept as self.patch_height, self.patch_width
    size = f["image_size"]
    assert sorted(size.value) == [16, 24] and "rebuilds it just as exactly" in size.note
