"""Widths that are products of arguments (``_forms/sources/products.py``, the rule
``_forms/candidates/rules/factored.py`` and the rivals ``candidates/ambiguous.py`` tries): read
off the AST, solved for one or two factors, and, where the layers show the product alone, the
factors found flagged as a guess, never shown as proven."""

from __future__ import annotations

import torch
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules.factored import solutions, value
from torchxray._forms.sources.products import Product


class PatchHead(nn.Module):
    """A decoder's last layer: one token back to a patch's pixels, nothing else shows ``patch``."""

    def __init__(self, width, patch, channels, eps=1e-6):
        super().__init__()
        self.norm = nn.LayerNorm(width, eps=eps)
        self.proj = nn.Linear(width, patch**2 * channels)

    def forward(self, x):
        return self.proj(self.norm(x))


class PatchCodec(nn.Module):
    """The same product, with ``patch`` shown by the stem's kernel: the channels are proven."""

    def __init__(self, channels, width, patch):
        super().__init__()
        self.stem = nn.Conv2d(channels, width, patch, stride=patch)
        out = patch * patch * channels
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.stem(x).flatten(2).transpose(1, 2))


def test_a_product_is_solved_for_one_factor_then_two() -> None:
    p = Product("proj", (("channels", 1), ("patch", 2)), 1)
    assert value(p, {"channels": 3, "patch": 4}) == 48
    got = list(solutions(p, 48, {"channels": 3, "patch": 8}, {"channels": 3, "patch": 8}))
    assert got[0] == {"patch": 4}  # channels kept: one factor solved
    pairs = [g for g in got if len(g) == 2]
    assert {"patch": 2, "channels": 12} in pairs and {"patch": 1, "channels": 48} in pairs
    assert pairs.index({"patch": 2, "channels": 12}) < pairs.index({"patch": 1, "channels": 48})
    assert all(g["patch"] ** 2 * g["channels"] == 48 for g in pairs)


def test_factors_the_layers_do_not_tell_apart_are_a_flagged_guess() -> None:
    torch.manual_seed(0)
    live = PatchHead(32, 2, 4)
    f = tx.form(live)
    assert not f.inexact, f.inexact
    by = {x.name: x for x in f.fields}
    assert by["patch"].value ** 2 * by["channels"].value == 16
    for name in ("patch", "channels"):
        assert "a guess" in by[name].note, by[name]
    assert by["width"].value == 32 and "guess" not in by["width"].note
    rebuilt = f.build()
    assert rebuilt.proj.out_features == 16


def test_a_factor_shown_elsewhere_leaves_the_other_proven() -> None:
    torch.manual_seed(0)
    f = tx.form(PatchCodec(3, 24, 4))
    assert not f.inexact, f.inexact
    by = {x.name: x for x in f.fields}
    assert (by["channels"].value, by["width"].value, by["patch"].value) == (3, 24, 4)
    assert not any("guess" in x.note for x in f.fields), f.fields
