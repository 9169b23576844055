"""A container slot holding None (``nn.ModuleList([conv if d else None for d in down])``, which
``add_module`` accepts) made ``tx.form`` raise ``AttributeError: 'NoneType' object has no
attribute 'modules'`` instead of answering (issue 58): `_forms/layout.py` ``per_layer`` iterates
a container's items (``for item in c``), which yields the None, and calls ``item.modules()``;
reached from `_forms/candidates.py` ``_kind_pool`` for a plural parameter (a name ending in
"s" of kind int_or_tuple or literal). The fix belongs to the forms package (issue 58, phase 2):
strict, so this test fails the day the form answers, and must then assert what it answers."""

from __future__ import annotations

import pytest
from torch import nn

import torchxray as tx


class Stages(nn.Module):
    def __init__(self, widths: tuple[int, ...] = (4, 8), down: tuple[bool, ...] = (False, True)):
        super().__init__()
        self.downs = nn.ModuleList(
            [nn.Conv2d(w, w, 2, 2) if d else None for w, d in zip(widths, down)]
        )
        self.stages = nn.ModuleList(nn.Conv2d(3 if i == 0 else widths[i - 1], w, 3, padding=1)
                                    for i, w in enumerate(widths))  # fmt: skip


@pytest.mark.xfail(
    strict=True, raises=AttributeError, reason="_forms/layout.py per_layer: None slot"
)
def test_a_form_answers_for_a_container_holding_none() -> None:
    f = tx.form(Stages())
    assert isinstance(f.inexact, str)
