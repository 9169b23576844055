"""The divisibility partners (``_forms/candidates/divisible.py``) on a library class, at the form
budget a user gets (no roomy budget here: the regression showed only there)."""

from __future__ import annotations

import pytest
import torch

import torchxray as tx


def test_no_partner_is_moved_while_nothing_builds() -> None:
    # torchvision's ViT encoder: a field moved beside num_heads still at its default failed the
    # check; a partner step there (num_heads=1) built and led the search nowhere.
    torchvision = pytest.importorskip("torchvision")
    with torch.device("meta"):
        encoder = torchvision.models.vit_b_16().encoder
    f = tx.form(encoder)
    assert not f.inexact, f.inexact
    assert (f["hidden_dim"].value, f["num_heads"].value, f["mlp_dim"].value) == (768, 12, 3072)
