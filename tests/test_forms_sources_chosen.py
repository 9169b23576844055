"""Names that choose which layers are another kind (``_forms/sources/chosen.py``: ``if name in
cfg.adapt: Adapted(...)``), read back off the layers' classes."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.lookups import AdaptCfg, AdaptedAttention
from torchxray._forms.sources.chosen import chosen

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_names_that_choose_which_layers_are_adapted_are_read_off_their_classes() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("query", "value", "out"))
    attn = AdaptedAttention(16, 2, cfg)
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ("query",)) == [("query", "value", "out")]
    assert chosen(AdaptedAttention, attn, "cfg.adapt", ["query"]) == [["query", "value", "out"]]
    assert chosen(AdaptedAttention, attn, "heads") == []
    f = _exact(attn)
    assert f["cfg"].value == cfg
