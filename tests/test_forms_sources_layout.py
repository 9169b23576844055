"""The children's structure as shapes (stage 2, ``_forms/sources/layout.py``): what a module's
layers keep, read past a container slot that holds None (``nn.ModuleList([conv if d else None
for d in down])``, which ``add_module`` accepts): such a slot holds no layer, and the form answers
(issue 58: it raised ``AttributeError: 'NoneType' object has no attribute 'modules'``)."""

from __future__ import annotations

from torch import nn

import torchxray as tx
from torchxray._forms.sources import layout


class Stages(nn.Module):
    def __init__(self, widths: tuple[int, ...] = (4, 8), down: tuple[bool, ...] = (False, True)):
        super().__init__()
        self.downs = nn.ModuleList(
            [nn.Conv2d(w, w, 2, 2) if d else None for w, d in zip(widths, down)]
        )
        self.stages = nn.ModuleList(
            nn.Conv2d(3 if i == 0 else widths[i - 1], w, 3, padding=1) for i, w in enumerate(widths)
        )


def test_a_slot_holding_none_holds_no_layer() -> None:
    m = Stages()
    # Each conv's stride, per container (the down-sampling one alone) and over all the layers.
    assert layout.per_layer(m, "stride") == [(1, 1), (2, 1, 1)]
    assert layout.per_item(m) == [[3, 4], [4, 8], [3, 4, 8]]
    assert layout.read(m).lengths == (2, 2)


def test_a_form_answers_for_a_container_holding_none() -> None:
    f = tx.form(Stages())
    assert f.inexact == "", f.inexact
    assert f["widths"].value == (4, 8) and f["down"].value == (False, True)


def test_widths_read_across_weightless_items() -> None:
    net = nn.Sequential(nn.Linear(17, 8), nn.ELU(), nn.Linear(8, 8), nn.ELU())
    assert [17, 8, 8] in layout.per_item(nn.Sequential(net), across=True)
    normed = nn.Sequential(nn.Linear(17, 8), nn.LayerNorm(8), nn.Linear(8, 8))
    assert [17, 8, 8] not in layout.per_item(
        nn.Sequential(normed), across=True
    )  # a norm has weights
