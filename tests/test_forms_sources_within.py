"""Arguments a constructor keeps inside what an attribute holds (``usage.py``'s ``within``,
``passed.py``'s ``kept``): an activation function in a dict, in a pair unpacked into attributes,
closed over by a lambda; one kept only by its name is refused in a sentence, never guessed. And an
argument unpacked itself (``c, h, w = obs_shape``) is never offered a number; where nothing gives
its items the refusal names it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray._forms.sources.usage import fits, usage

pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class InDict(nn.Module):
    def __init__(self, d, act=F.relu):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.fns = {"hidden": act}


class Pair(nn.Module):
    def __init__(self, d, acts=(torch.relu, torch.tanh)):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.hidden_act, self.out_act = acts


class Closed(nn.Module):
    def __init__(self, d, activation=F.relu):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.act = lambda x: activation(x) * 2


class ByName(nn.Module):
    def __init__(self, d, activation=F.relu):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.act_name = activation.__name__


class Unpacked(nn.Module):
    def __init__(self, obs_shape, n_out):
        super().__init__()
        c, h, w = obs_shape
        self.conv = nn.Conv2d(c, 4, 3)
        self.fc = nn.Linear(4 * (h - 2) * (w - 2), n_out)


def test_where_an_argument_is_kept_inside_an_attribute() -> None:
    assert usage(InDict, "act").within == (("fns", "hidden"),)
    assert usage(Pair, "acts").items_kept == ("hidden_act", "out_act")
    assert usage(Closed, "activation").within == (("act", ("cell", "activation")),)


@pytest.mark.parametrize(
    ("make", "name", "value"),
    [
        (lambda: InDict(4, F.silu), "act", F.silu),
        (lambda: Pair(4, (F.elu, torch.sigmoid)), "acts", (F.elu, torch.sigmoid)),
        (lambda: Closed(4, F.gelu), "activation", F.gelu),
    ],
    ids=["dict", "pair", "closure"],
)
def test_a_function_kept_inside_is_recovered(make, name, value) -> None:  # type: ignore[no-untyped-def]
    f = tx.form(make())
    assert f.inexact == ""
    assert f[name].value == value


def test_a_function_kept_only_by_its_name_is_refused_in_a_sentence() -> None:
    f = tx.form(ByName(4, F.elu))
    assert "act_name would be 'relu', the live one is 'elu'" in f.inexact


def test_an_argument_unpacked_itself_takes_no_number_and_its_refusal_names_it() -> None:
    u = usage(Unpacked, "obs_shape")
    assert u.unpacks and u.unpacked == 3
    assert not fits(u, 3) and fits(u, (3, 8, 8)) and not fits(u, (3, 8))
    f = tx.form(Unpacked((3, 8, 7), 2))
    assert "obs_shape is unpacked into 3 values" in f.inexact


class Rebound(nn.Module):
    def __init__(self, size):
        super().__init__()
        size = (size, size) if isinstance(size, int) else size
        h, w = size
        self.fc = nn.Linear(h * w, 2)


def test_an_argument_rebound_before_it_is_unpacked_may_be_a_number() -> None:
    assert not usage(Rebound, "size").unpacks and fits(usage(Rebound, "size"), 4)


class TriedPair(nn.Module):
    def __init__(self, patch=4):
        super().__init__()
        try:
            ph, pw = patch
        except TypeError:
            ph = pw = patch
        self.patch = patch
        self.proj = nn.Conv2d(3, 8, (ph, pw), (ph, pw))


def test_an_unpack_inside_a_try_that_handles_an_int_takes_an_int() -> None:
    assert fits(usage(TriedPair, "patch"), 4)
    f = tx.form(TriedPair(2))
    assert f.inexact == "" and f["patch"].value == 2


class Starred(nn.Module):
    def __init__(self, d, act=F.relu, extra=()):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.acts = (*extra, act)


def test_an_argument_after_a_starred_item_has_no_place_in_the_tuple() -> None:
    assert usage(Starred, "act").within == ()
