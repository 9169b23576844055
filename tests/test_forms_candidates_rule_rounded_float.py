"""The rule rounded_float (``_forms/candidates/rules/rounded_float.py``) alone, on a real library class: a
stochastic-depth rate read back with the rounding of the arithmetic that derived it."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds

from torchxray._forms.candidates.rules import rounded_float

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_rate_off_by_its_last_digits_takes_its_short_form() -> None:
    cn = pytest.importorskip("torchvision.models.convnext")
    setting = [cn.CNBlockConfig(16, 32, 9), cn.CNBlockConfig(32, None, 9)]
    live = dict(block_setting=setting, stochastic_depth_prob=0.1)
    built = dict(block_setting=setting, stochastic_depth_prob=0.09999999999999999)
    got = proposed(rounded_float.propose, cn.ConvNeXt, live, built)
    assert got[0] == {"stochastic_depth_prob": 0.1}
    assert rebuilds(cn.ConvNeXt, live, {**built, **got[0]})


def test_numbers_that_differ_by_more_than_rounding_propose_nothing() -> None:
    cn = pytest.importorskip("torchvision.models.convnext")
    setting = [cn.CNBlockConfig(16, 32, 2), cn.CNBlockConfig(32, None, 2)]
    live = dict(block_setting=setting, stochastic_depth_prob=0.1)
    built = dict(block_setting=setting, stochastic_depth_prob=0.2000000000000001)
    assert proposed(rounded_float.propose, cn.ConvNeXt, live, built) == []
