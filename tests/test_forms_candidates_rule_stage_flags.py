"""The rule stage_flags (``_forms/candidates/rules/stage_flags.py``) alone, on classes written
here: a dilated backbone that takes one flag per stage (None standing for all False, as the
constructor sets it), and the literal it sets read from its source (``usage``'s ``rebound``)."""

from __future__ import annotations

import pytest
from fixtures.rules import proposed, rebuilds
from torch import nn

import torchxray as tx
from torchxray._forms.candidates.rules import stage_flags
from torchxray._forms.rebuild.compare import differences
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.sources.usage import usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class DilatedBackbone(nn.Module):
    """Three stages that halve the resolution, or dilate instead where their flag says so (a
    segmentation backbone's output stride); the flags are not kept."""

    def __init__(self, depths: list[int], width: int = 8, dilate: list[bool] | None = None) -> None:
        super().__init__()
        if dilate is None:
            dilate = [False, False, False]
        if len(dilate) != 3:
            raise ValueError(f"dilate takes one flag per stage, got {dilate}")
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        rate = 1
        stages = []
        for i, n in enumerate(depths):
            stride = 2
            if dilate[i]:
                rate, stride = rate * 2, 1
            blocks = [nn.Conv2d(width, width, 3, stride, padding=rate, dilation=rate)]
            blocks += [
                nn.Conv2d(width, width, 3, padding=rate, dilation=rate) for _ in range(n - 1)
            ]
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.ModuleList(stages)


class Strided(nn.Module):
    def __init__(self, width: int, flags: tuple[bool, ...] = (True, True)) -> None:
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(width, width, 3, 2 if f else 1) for f in flags)


def test_the_literal_the_constructor_sets_an_unset_argument_to_is_read() -> None:
    assert usage(DilatedBackbone, "dilate").rebound == ([False, False, False],)
    assert usage(DilatedBackbone, "width").rebound == ()


def test_each_flag_of_the_list_the_constructor_sets_is_flipped_alone() -> None:
    live = dict(depths=[1, 2, 1], dilate=[False, True, False])
    built = dict(depths=[1, 2, 1], dilate=None)
    got = proposed(stage_flags.propose, DilatedBackbone, live, built)
    assert {"dilate": [True, False, False]} in got
    assert {"dilate": [False, True, False]} in got
    assert {"dilate": [False, False, True]} in got
    assert rebuilds(DilatedBackbone, live, {**built, "dilate": [False, True, False]})


def test_a_list_of_flags_given_keeps_its_kind() -> None:
    live, built = dict(width=4, flags=(True, False)), dict(width=4, flags=(True, True))
    got = proposed(stage_flags.propose, Strided, live, built)
    assert {"flags": (True, False)} in got
    assert {"flags": (False, True)} in got


def test_the_form_finds_the_flags_one_at_a_time() -> None:
    live = DilatedBackbone([1, 2, 1], width=8, dilate=[False, True, True])
    f = tx.form(live)
    assert f.inexact == ""
    assert list(f["dilate"].value) == [False, True, True]
    assert not differences(parts(live), parts(f.build()))
