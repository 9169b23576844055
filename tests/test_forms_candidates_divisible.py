"""A value the search moves whose build fails a divisibility check ("dim must be divisible by
heads", "channels must be a multiple of groups") is tried with the field the message names moved
too (``_forms/candidates/divisible.py``): a model at a base model's defaults (768 wide, 12 heads;
256 wide, 32 groups) built small. The zoo's ``tests/handwritten/styles7_lead.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact

from tests.handwritten.styles7_lead import FramePatchClassifier, GroupedDenoiser
from torchxray._forms.candidates.divisible import partners
from torchxray._forms.field import Field

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _int(name: str, value: int) -> Field:
    return Field(name, "int", value, value, False, (), "default", "", str(value), False)


def test_a_width_and_a_head_count_at_base_defaults_are_moved_together() -> None:
    f = _exact(FramePatchClassifier(n_mels=16, patch=8, dim=32, depth=2, heads=4, n_classes=6))
    assert {k: f[k].value for k in ("dim", "depth", "heads")} == {"dim": 32, "depth": 2, "heads": 4}
    g = _exact(GroupedDenoiser(in_ch=1, width=12, n_blocks=2, groups=3))
    assert (g["width"].value, g["groups"].value) == (12, 3)


def test_partners_are_the_fields_the_message_names() -> None:
    fields = [_int("dim", 768), _int("depth", 12), _int("cfg.n_heads", 12)]
    values = {"dim": 768, "depth": 12, "cfg.n_heads": 12}
    pools = {"dim": [32], "depth": [2], "cfg.n_heads": [12, 4, 2]}
    got = partners(
        "AssertionError: dim must be divisible by n_heads", "dim", 32, values, pools, fields
    )
    assert got == [{"dim": 32, "cfg.n_heads": 4}, {"dim": 32, "cfg.n_heads": 2}]
    # torch's own message names num_heads: a field named heads is in it
    heads = [_int("heads", 12)]
    assert partners(
        "embed_dim must be divisible by num_heads", "dim", 32, {"heads": 12}, {"heads": [4]}, heads
    ) == [{"dim": 32, "heads": 4}]
    assert (
        partners("TypeError: 'int' object is not subscriptable", "dim", 32, values, pools, fields)
        == []
    )
