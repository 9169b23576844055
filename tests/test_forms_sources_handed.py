"""A ``**kwargs`` handed on to a layer (stage 2, ``_forms/sources/handed.py``): the keywords of the
layer the call made, on real library classes (random init, nothing downloaded); the form of a
module built without recording is exact, and its unchanged build has the live parts."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_dict_of_keywords_handed_on_takes_the_layers_own_keywords() -> None:
    sk = pytest.importorskip("timm.models.sknet")
    block = sk.SelectiveKernelBasic(64, 64, sk_kwargs=dict(rd_ratio=1 / 8, rd_divisor=16))
    f = exact(block)
    assert f["sk_kwargs"].value  # the reduction width, however the dict names it


def test_keywords_handed_through_a_block_factory_read_off_the_blocks_it_made() -> None:
    timm = pytest.importorskip("timm")
    stage = timm.create_model("darknet17", pretrained=False).stages[0]
    f = exact(stage)
    kw = f["block_kwargs"].value
    assert kw["norm_layer"] is not None and kw["act_layer"] is not None
