"""The rule handed_kwargs (``_forms/candidates/rules/handed_kwargs.py``) alone, on a real library class: the
keywords a bottleneck handed to its selective kernel, read off that layer."""

from __future__ import annotations

import pytest
from fixtures.rules import child, proposed, rebuilds

from torchxray._forms.candidates.rules import handed_kwargs

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_keywords_dict_takes_the_keywords_of_the_layer_it_made() -> None:
    sknet = pytest.importorskip("timm.models.sknet")
    live = dict(inplanes=64, planes=16, sk_kwargs=dict(rd_divisor=16))
    built = dict(inplanes=64, planes=16)
    got = proposed(handed_kwargs.propose, sknet.SelectiveKernelBottleneck, live, built, child)
    assert got and all(set(change) == {"sk_kwargs"} for change in got)
    assert any(rebuilds(sknet.SelectiveKernelBottleneck, live, {**built, **c}) for c in got)
    # Without a child form there is nothing to read.
    assert proposed(handed_kwargs.propose, sknet.SelectiveKernelBottleneck, live, built) == []
