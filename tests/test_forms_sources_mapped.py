"""A dict iterated to make one layer per key (``_forms/sources/mapped.py``): read back off the
container those layers are held in, in a comprehension, a loop or through a helper method
(models in ``tests/handwritten/dictconfigs.py``)."""

from __future__ import annotations

from torch import nn

import torchxray as tx
from tests.handwritten import CASES
from tests.handwritten.dictconfigs import FieldEmbedder, TaskHeads
from torchxray._forms.sources.mapped import mapped


def test_a_dict_iterated_into_a_moduledict_reads_back_off_it() -> None:
    m = FieldEmbedder({"vocab": {"city": 12, "device": 5}, "width": 6, "out": 3})
    assert mapped(FieldEmbedder, m, "spec.vocab") == [{"city": 12, "device": 5}]
    heads = TaskHeads(8, {"b": 3, "a": 1})  # keys in the order given, through a helper method
    assert mapped(TaskHeads, heads, "outputs") == [{"b": 3, "a": 1}]


def test_a_value_handed_inside_an_expression_is_not_read() -> None:
    class Doubled(nn.Module):
        def __init__(self, sizes):
            super().__init__()
            self.t = nn.ModuleDict({k: nn.Embedding(2 * n, 4) for k, n in sizes.items()})

    assert mapped(Doubled, Doubled({"a": 3}), "sizes") == []  # 6 is not the value given


def test_forms_of_dicts_made_into_moduledicts_are_exact() -> None:
    f = tx.form(CASES["dict_vocab_moduledict"].build())
    assert not f.inexact
    spec = f["spec"].value
    assert spec["vocab"] == {"city": 12, "device": 5, "hour": 24} and spec["width"] == 6
    f = tx.form(CASES["dict_heads_helper"].build())
    assert not f.inexact and f["outputs"].value == {"age": 1, "mood": 4, "topic": 7}
