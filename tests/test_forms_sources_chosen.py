"""Names that choose which layers are another kind (``_forms/sources/chosen.py``: ``if name in
cfg.adapt: Adapted(...)``), read back off the layers' classes."""

from __future__ import annotations

import pytest
from torch import nn

import torchxray as tx
from tests.handwritten.lookups import AdaptCfg, AdaptedAttention
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.chosen import chosen

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _exact(m: nn.Module) -> tx.Form:
    f = tx.form(m)
    assert f.inexact == ""
    assert not differences(parts(m), parts(f.build()))
    return f


def test_names_that_choose_which_layers_are_adapted_are_read_off_their_classes() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("query", "value", "out"))
    attn = AdaptedAttention(16, 2, cfg)
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ("query",)) == [("query", "value", "out")]
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ["query"]) == [["query", "value", "out"]]
    assert chosen(AdaptedAttention, attn, "heads") == []
    f = _exact(attn)
    assert f["cfg"].value == cfg
