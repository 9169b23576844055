"""A torch layer's subclass ``__init__(self, *args, **kwargs)`` that reads keywords of its own
out of ``kwargs`` before handing the rest to its parent (``torchxray._signature``): the parent's
parameters, then those keywords (the zoo's ``tests/handwritten/styles7_r6b.py``)."""

from __future__ import annotations

import inspect

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles7_r6b import CausalConv1d, ScaledEmbedding
from torchxray._signature import resolve

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_keywords_read_out_of_kwargs_join_the_parents_parameters() -> None:
    sig = resolve(CausalConv1d)
    assert list(sig.parameters)[:3] == ["in_channels", "out_channels", "kernel_size"]
    assert sig.parameters["causal"].default is True  # the else: branch's literal
    assert sig.parameters["causal"].kind is inspect.Parameter.KEYWORD_ONLY
    sig = resolve(ScaledEmbedding)
    assert (sig.parameters["scale"].default, sig.parameters["tie"].default) == (1.0, None)


class _Tested(nn.Linear):
    def __init__(self, *args, **kwargs):
        if "gain" in kwargs:
            self.gain = kwargs.pop("gain")  # absent: nothing says what it means
        super().__init__(*args, **kwargs)


class _Used(nn.Linear):
    def __init__(self, *args, **kwargs):
        self.seen = dict(kwargs)  # kwargs used otherwise: not read as keywords
        kwargs.pop("gain", None)
        super().__init__(*args, **kwargs)


def test_kwargs_used_otherwise_or_an_unexplained_test_are_not_read() -> None:
    assert "gain" not in resolve(_Tested).parameters
    assert "gain" not in resolve(_Used).parameters


def test_the_subclass_and_its_keyword_are_exact() -> None:
    f = _exact(CausalConv1d(5, 1, 3, padding=1, causal=False, bias=False))
    assert (f["in_channels"].value, f["causal"].value, f["bias"].value) == (5, False, False)
    f = _exact(ScaledEmbedding(30, 8, padding_idx=0, scale=2.0))
    assert (f["num_embeddings"].value, f["scale"].value) == (30, 2.0)
