"""A list argument made one layer per item (``_forms/sources/items.py`` with ``usage.py``'s
``items_handed``): ``cards[i]`` in a ``range(len(cards))`` loop, ``for n in cards``, ``zip(channels,
kernels)`` and ``sizes[i]`` / ``sizes[i + 1]`` read back off the layers, joined by their offsets;
and the forms of such classes left None (or given an int) before, now exact."""

from __future__ import annotations

import pytest
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.items import items_of
from torchxray._forms.sources.usage import Handed, usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Indexed(nn.Module):
    def __init__(self, cards, d):
        super().__init__()
        self.emb = nn.ModuleList()
        for i in range(len(cards)):
            self.emb.append(nn.Embedding(cards[i], d))


class Iterated(nn.Module):
    def __init__(self, cards, d):
        super().__init__()
        self.emb = nn.ModuleList([nn.Embedding(n, d) for n in cards])


class Zipped(nn.Module):
    def __init__(self, in_ch, channels, kernels):
        super().__init__()
        layers = []
        for ch, k in zip(channels, kernels):
            layers.append(nn.Conv2d(in_ch, ch, k))
            in_ch = ch
        self.body = nn.Sequential(*layers)


class Shifted(nn.Module):
    def __init__(self, sizes, act=F.relu):
        super().__init__()
        self.first = nn.Linear(3, sizes[0])
        self.layers = nn.ModuleList(
            [nn.Linear(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)]
        )
        self.act = act


def test_the_items_handed_to_layers_are_noted_with_their_offsets() -> None:
    assert usage(Indexed, "cards").items_handed == (Handed(nn.Embedding, "num_embeddings", "emb"),)
    assert usage(Iterated, "cards").items_handed == (Handed(nn.Embedding, "num_embeddings", "emb"),)
    # made in a local list spread into ``self.body = nn.Sequential(*layers)``: kept there
    assert usage(Zipped, "kernels").items_handed == (Handed(nn.Conv2d, "kernel_size", "body"),)
    got = usage(Shifted, "sizes").items_handed  # sizes[0] is a constant index: not an item
    assert got == (
        Handed(nn.Linear, "in_features", "layers", -1, 0),
        Handed(nn.Linear, "out_features", "layers", -1, 1),
    )


def test_the_items_are_read_back_and_joined() -> None:
    assert items_of(Indexed([5, 7, 3], 4), usage(Indexed, "cards"))[0] == [5, 7, 3]
    assert items_of(Zipped(3, (8, 16), (5, 3)), usage(Zipped, "kernels")) == [[5, 3]]
    # in_features [6, 8] at offset 0 and out_features [8, 2] at offset 1: [6, 8, 2].
    assert items_of(Shifted([6, 8, 2]), usage(Shifted, "sizes"))[0] == [6, 8, 2]
    assert items_of(Indexed([], 4), usage(Indexed, "cards")) == []


@pytest.mark.parametrize(
    ("make", "name", "value"),
    [
        (lambda: Indexed([5, 7, 3], 4), "cards", [5, 7, 3]),
        (lambda: Iterated([5, 7, 3], 4), "cards", [5, 7, 3]),
        (lambda: Shifted([6, 8, 2]), "sizes", [6, 8, 2]),
    ],
    ids=["indexed", "iterated", "shifted"],
)
def test_the_form_of_a_list_made_one_layer_per_item_is_exact(make, name, value) -> None:  # type: ignore[no-untyped-def]
    live = make()
    f = tx.form(live)
    assert f.inexact == ""
    assert list(f[name].value) == value
    assert not differences(parts(live), parts(f.build()))
