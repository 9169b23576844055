"""The rule kept_multiple (``_forms/candidates/rules/kept_multiple.py``) alone, on a class
written here: a grouped bottleneck whose output is ``4 * planes`` and whose inner width is
``planes * width_per_group // 64 * groups``, built with ``planes`` wrong and its inner width
right."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import kept_multiple

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class GroupedBottleneck(nn.Module):
    """torchvision's bottleneck written again: ``expansion`` on the class, the inner width a
    product of three arguments, none of them kept."""

    expansion = 4

    def __init__(
        self, in_ch: int, planes: int, cardinality: int = 1, width_per_group: int = 64
    ) -> None:
        super().__init__()
        width = int(planes * (width_per_group / 64.0)) * cardinality
        self.conv1 = nn.Conv2d(in_ch, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)


def test_the_field_a_number_is_a_multiple_of_moves_with_the_one_that_keeps_the_product() -> None:
    # Output 4 * 2 = 8 against 4 * 16 = 64; inner 2 * 64 // 64 * 2 = 4 against 16 * 8 // 64 * 2.
    live = dict(in_ch=8, planes=16, cardinality=2, width_per_group=8)
    built = dict(in_ch=8, planes=2, cardinality=2, width_per_group=64)
    got = proposed(kept_multiple.propose, GroupedBottleneck, live, built)
    assert {"planes": 16, "width_per_group": 8} in got
    assert all(len(change) == 2 for change in got)
    assert not rebuilds(GroupedBottleneck, live, {**built, "planes": 16})
    assert rebuilds(GroupedBottleneck, live, {**built, "planes": 16, "width_per_group": 8})


def test_a_number_no_field_is_a_multiple_of_proposes_nothing() -> None:
    live = dict(in_ch=8, planes=16, cardinality=2, width_per_group=8)
    built = dict(in_ch=7, planes=16, cardinality=2, width_per_group=8)  # 7 against 8: no k
    assert proposed(kept_multiple.propose, GroupedBottleneck, live, built) == []


def test_the_form_of_a_block_with_both_wrong_at_first_is_exact() -> None:
    live = GroupedBottleneck(8, 16, cardinality=2, width_per_group=8)
    f = tx.form(live)
    assert f.inexact == ""
    assert (f["planes"].value, f["cardinality"].value, f["width_per_group"].value) == (16, 2, 8)
