"""Two arguments the constructor checks are equal (``_forms/sources/asserted.py``: ``assert a ==
b``, ``if a != b: raise``), moved together by the search (``candidates/loop.py``'s ties); the
zoo's ``tests/handwritten/styles6_r5a.py``."""

from __future__ import annotations

import pytest
from fixtures.forms import exact as _exact
from torch import nn

from tests.handwritten.styles6_r5a import AVNet, CaptionDecoder
from torchxray._forms.sources.asserted import equal_pairs

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def test_two_arguments_checked_equal_are_moved_together() -> None:
    assert equal_pairs(CaptionDecoder) == (("feat_dim", "hidden"),)
    fuse = AVNet().fuse
    assert equal_pairs(type(fuse)) == (("audio_dim", "video_dim"),)
    f = _exact(CaptionDecoder(30, 10, 24, 24))
    assert (f["hidden"].value, f["feat_dim"].value) == (24, 24)
    f = _exact(fuse)
    assert (f["audio_dim"].value, f["video_dim"].value, f["fused"].value) == (16, 16, 12)


class Rebound(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        b = b * 2
        assert a == b
        self.fc = nn.Linear(a, b)


def test_a_pair_rebound_first_is_not_read() -> None:
    assert equal_pairs(Rebound) == ()


def test_a_check_made_on_some_calls_only_ties_nothing() -> None:
    class Block(nn.Module):
        def __init__(self, dim: int, dim_out: int, stride: int = 1) -> None:
            super().__init__()
            if stride == 2:
                self.shortcut = nn.Conv2d(dim, dim_out, 1, stride=2)
            else:
                assert dim == dim_out  # holds where the stride is 1 only
                self.shortcut = nn.Identity()
            self.conv = nn.Conv2d(dim, dim_out, 3, stride=stride, padding=1)

    assert equal_pairs(Block) == ()
    f = _exact(Block(8, 16, stride=2))
    assert (f["dim"].value, f["dim_out"].value) == (8, 16)
