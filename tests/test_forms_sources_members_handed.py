"""A member of a config dataclass handed on whole to a layer (``_forms/sources/members_handed.py``),
read off that layer's form."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.lookups import AdaptCfg, AdaptedEncoder

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_config_member_handed_on_whole_is_read_off_the_layers_form() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("key", "out"))
    f = _exact(AdaptedEncoder(60, cfg=cfg))
    assert f["cfg"].value == cfg
