"""Per-stage lists read off a whole model's stages (``_forms/sources/stagelists.py``, issue 40 item 4):
a model built from a list of depths and a list of widths keeps neither; its stages do. Real
torchvision classes built from their configs, random init."""

from __future__ import annotations

import warnings

import pytest
from torch import nn

import torchxray as tx
from torchxray._forms.sources.stagelists import stage_lists

warnings.filterwarnings("ignore")

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def _shufflenet(repeats: list[int], widths: list[int]) -> nn.Module:
    tvm = pytest.importorskip("torchvision.models")
    return tvm.ShuffleNetV2(repeats, widths, num_classes=10)


def test_stage_depths_and_widths_are_read_off_the_stages() -> None:
    m = _shufflenet([2, 3, 2], [16, 32, 64, 128, 256])
    # A block joins two branches: its width is what the next stage reads, not its last layer's.
    assert [2, 3, 2] in stage_lists(m)
    assert [16, 32, 64, 128, 256] in stage_lists(m)


@pytest.mark.parametrize(
    ("repeats", "widths"),
    [([4, 8, 4], [24, 48, 96, 192, 1024]), ([2, 3, 2], [16, 32, 64, 128, 256])],
)
def test_a_model_built_from_per_stage_lists_rebuilds_exactly(
    repeats: list[int], widths: list[int]
) -> None:
    f = tx.form(_shufflenet(repeats, widths))
    assert f.inexact == ""
    assert f["stages_repeats"].value == repeats and f["stages_out_channels"].value == widths
    assert f["stages_repeats"].origin == "inferred"
    assert f["num_classes"].value == 10


def test_an_edit_of_a_stage_list_applies() -> None:
    m = _shufflenet([2, 3, 2], [16, 32, 64, 128, 256])
    built = tx.form(m).build(stages_repeats=[1, 1, 1])
    assert [len(built.stage2), len(built.stage3), len(built.stage4)] == [1, 1, 1]


def test_children_that_are_not_consecutive_stages_give_no_reading() -> None:
    m = nn.Sequential(
        nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.Sequential(nn.Linear(2, 2))),
        nn.Linear(2, 2),
        nn.Sequential(nn.Sequential(nn.Linear(2, 2))),
    )
    assert stage_lists(m) == []
