"""The rule part_named (``_forms/candidates/rules/part_named.py``) alone, on a real library class: a pooler
only the build has turns off the flag named like it."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import part_named

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_part_on_one_side_only_moves_the_field_that_shares_its_name() -> None:
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        vocab_size=100,
    )
    live, built = (
        dict(config=cfg, add_pooling_layer=False),
        dict(config=cfg, add_pooling_layer=True),
    )
    got = proposed(part_named.propose, transformers.BertModel, live, built)
    assert got == [{"add_pooling_layer": False}]
    assert rebuilds(transformers.BertModel, live, {**built, **got[0]})
