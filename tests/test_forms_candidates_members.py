"""The members of a dataclass argument (stage 3, ``_forms/candidates/members.py``): a difference read
as a change of one member, made on a copy; on a real library class (random init, nothing
downloaded)."""

from __future__ import annotations

import warnings

import pytest
from fixtures.forms import exact
from torch import nn

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_a_member_of_a_dataclass_argument_is_changed_on_a_copy() -> None:
    byobnet = pytest.importorskip("timm.models.byobnet")
    # The stem keeps no LayerFn: its layers were made by the factories it holds, SiLU inside.
    layers = byobnet.get_layer_fns(byobnet.ByoModelCfg(blocks=(), act_layer="silu"))
    f = exact(byobnet.Stem(3, 64, layers=layers))
    assert f["layers"].value.conv_norm_act.keywords["act_layer"] is nn.SiLU
    maxxvit = pytest.importorskip("timm.models.maxxvit")
    # A cfg dataclass whose activation is named by a string.
    cfg = maxxvit.MaxxVitConvCfg(act_layer="silu")
    f = exact(maxxvit.MbConvBlock(32, 64, cfg=cfg))
    assert f["cfg.act_layer"].value == "silu"
