"""A factory argument the constructor calls, read where nothing annotates it
(``_forms/sources/called.py``): the functions of the constructor's module named like it are its
candidates, and where two of them rebuild the module as exactly, the one found is a flagged
guess. Small hand-written blocks (random init, CPU)."""

from __future__ import annotations

import pytest
from fixtures.forms import exact
from torch import nn

from tests.handwritten.styles5 import ConvRes, same_pad_conv
from torchxray._forms.sources.called import named_functions

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


def padded_conv(c_in, c_out, k, bias=True):  # type: ignore[no-untyped-def]
    return nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=bias)


def halo_conv(c_in, c_out, k, bias=True):  # type: ignore[no-untyped-def]
    return nn.Conv2d(c_in, c_out, k, padding=(k - 1) // 2, bias=bias)  # the same for odd k


class _Twin(nn.Module):
    def __init__(self, conv, width):  # type: ignore[no-untyped-def]
        super().__init__()
        self.a = conv(width, width, 3)


def test_the_functions_named_like_a_called_argument_are_its_candidates() -> None:
    assert named_functions(ConvRes, "conv") == [same_pad_conv]
    assert named_functions(_Twin, "conv") == [padded_conv, halo_conv]
    assert named_functions(_Twin, "fn") == []  # a stem too short to name anything


def test_a_block_handed_the_function_that_makes_its_convs() -> None:
    f = exact(ConvRes(same_pad_conv, 6, 5, 0.5))
    assert f["conv"].value is same_pad_conv and f["conv"].origin == "inferred"
    assert (f["feats"].value, f["k"].value) == (6, 5)  # an int kernel: the function halves it


def test_two_functions_that_rebuild_alike_leave_a_flagged_guess() -> None:
    f = exact(_Twin(halo_conv, 4))
    assert f["conv"].value in (padded_conv, halo_conv) and f["conv"].origin == "default"
    assert "rebuilds it just as exactly" in f["conv"].note
