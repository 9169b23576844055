"""A member of a config dataclass handed on whole to a layer (``_forms/sources/members_handed.py``),
read off that layer's form."""

from __future__ import annotations

import pytest
from torch import nn

import torchxray as tx
from tests.handwritten.lookups import AdaptCfg, AdaptedEncoder
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _exact(m: nn.Module) -> tx.Form:
    f = tx.form(m)
    assert f.inexact == ""
    assert not differences(parts(m), parts(f.build()))
    return f


def test_a_config_member_handed_on_whole_is_read_off_the_layers_form() -> None:
    cfg = AdaptCfg(rank=3, scale=0.5, adapt=("key", "out"))
    f = _exact(AdaptedEncoder(60, cfg=cfg))
    assert f["cfg"].value == cfg
