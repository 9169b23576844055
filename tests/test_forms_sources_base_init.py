"""A ``**kwargs`` a subclass hands to a torch base's ``__init__`` (``_forms/sources/base_init.py``),
read off the module as the base keeps it; never a private parameter."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.lookups import TaggedEmbedding
from torchxray._forms.sources.base_init import base_kwargs

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_keywords_handed_to_a_torch_base_are_read_off_the_module() -> None:
    emb = TaggedEmbedding(30, 8, tag_scale=0.5, padding_idx=1, max_norm=2.0)
    assert base_kwargs(TaggedEmbedding, emb, "kwargs") == {"padding_idx": 1, "max_norm": 2.0}
    assert base_kwargs(TaggedEmbedding, TaggedEmbedding(30, 8), "kwargs") == {}
    assert _exact(emb)["kwargs"].value == {"padding_idx": 1, "max_norm": 2.0}


class Freezing(nn.Embedding):
    def __init__(self, n, d, **kw):
        super().__init__(n, d, **kw)
        self.weight.requires_grad = False  # what _freeze would say: never read as a keyword


def test_a_private_base_parameter_is_never_read_as_a_keyword() -> None:
    assert base_kwargs(Freezing, Freezing(10, 4, sparse=True), "kw") == {"sparse": True}
