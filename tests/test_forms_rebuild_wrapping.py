"""A parametrization the constructor adds itself is part of its form; one added later is not
(``_forms/rebuild/wrapping.py``, ``parts.py``)."""

from __future__ import annotations

import functools

import torch
from torch import nn
from torch.nn.utils import parametrizations as P
from torch.nn.utils import parametrize

import torchxray as tx
from torchxray._forms.rebuild.wrapping import wraps_layers


class Flagged(nn.Module):
    def __init__(self, channels: int = 4, use_norm: bool = False) -> None:
        super().__init__()
        conv = nn.Conv1d(channels, channels, 3, padding=1)
        self.conv = P.weight_norm(conv) if use_norm else conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def _spectral_linear(n: int) -> nn.Module:
    return P.spectral_norm(nn.Linear(n, n))


class Helped(nn.Module):
    """The wrapping made in a helper function of the module's file, chosen by a string."""

    def __init__(self, width: int = 8, norm: str = "none") -> None:
        super().__init__()
        self.fc = _spectral_linear(width) if norm == "spectral" else nn.Linear(width, width)


class Outer(nn.Module):
    """A block class of the user's makes the wrapping: the outer class reaches it."""

    def __init__(self, channels: int = 4, use_norm: bool = False) -> None:
        super().__init__()
        self.block = Flagged(channels, use_norm)


class Plain(nn.Module):
    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3)


def test_reading_code_finds_the_constructors_own_wrapping() -> None:
    assert wraps_layers(Flagged) and wraps_layers(Helped) and wraps_layers(Outer)
    assert not wraps_layers(Plain) and not wraps_layers(nn.Conv2d)

    def maker(n: int) -> nn.Module:
        return P.orthogonal(nn.Linear(n, n))

    class Closed(nn.Module):
        def __init__(self, n: int = 4) -> None:
            super().__init__()
            self.fc = maker(n)  # a closure's cell, not a global

    class Partial(nn.Module):
        def __init__(self, n: int = 4) -> None:
            super().__init__()
            self.fc = functools.partial(_spectral_linear)(n)

    assert wraps_layers(Closed) and wraps_layers(Partial)


def test_a_flag_that_wraps_is_read_from_the_wrapping_not_shown_off() -> None:
    # Before: the gate took the parametrization as added later, so use_norm=False passed it.
    for model, field in ((Flagged(8, use_norm=True), "use_norm"), (Outer(8, True), "use_norm")):
        f = tx.form(model)
        assert f.inexact == "" and f.values[field] is True, (type(model).__name__, f.values)
    f = tx.form(Helped(6, norm="spectral"))
    assert f.inexact == "" and f.values["norm"] == "spectral"


def test_a_wrapping_no_argument_can_make_is_refused_where_the_constructor_wraps() -> None:
    model = Flagged(4, use_norm=False)
    P.orthogonal(model.conv)  # added after: this constructor makes weight_norm only
    f = tx.form(model)
    assert f.inexact.startswith("inexact: ") and "conv.weight" in f.inexact


def test_a_wrapping_added_later_stays_out_of_a_plain_constructors_form() -> None:
    model = nn.Sequential(Plain(6))
    P.weight_norm(model[0].conv)
    assert tx.form(model[0]).inexact == ""
    assert parametrize.is_parametrized(model[0].conv)
