"""Kinds of values a constructor turns into something else before it keeps them: a name chosen
by a helper that returns the function it names (kept under the name's own attribute), and
keywords gathered once in a local dict and spread into every block."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- A name turned into the function it names by a helper, kept under the name -----------------


def pick_wave(kind):
    if kind == "sine":
        return torch.sin
    if kind == "cosine":
        return torch.cos
    if kind == "silu":
        return F.silu
    raise ValueError(f"unknown wave {kind}")


class WaveField(nn.Module):
    """A coordinate network whose periodic activation is named by a string."""

    def __init__(self, coords, width, channels, wave="sine"):
        super().__init__()
        self.inp = nn.Linear(coords, width)
        self.mid = nn.Linear(width, width)
        self.out = nn.Linear(width, channels)
        self.wave = pick_wave(wave)

    def forward(self, x):
        return self.out(self.wave(self.mid(self.wave(self.inp(x)))))


case(
    "name_to_function_helper",
    lambda: WaveField(3, 24, 2, wave="cosine"),
    args(lambda: randn(5, 3)),
    edit=("", {"width": 16}),
    styles="a string turned into a function by a module helper, kept under the same name",
)


_GATES = {"sigmoid": torch.sigmoid, "hard": F.hardsigmoid, "tanh": torch.tanh}


class GatedPool(nn.Module):
    """An attention pool over frames whose gate function is looked up in a module table."""

    def __init__(self, feat, gate="sigmoid"):
        super().__init__()
        self.score = nn.Conv1d(feat, 1, 1)
        self.gate = _GATES[gate]

    def forward(self, x):
        w = self.gate(self.score(x))
        return (x * w).sum(-1) / w.sum(-1).clamp_min(1e-6)


case(
    "name_to_function_table",
    lambda: GatedPool(10, gate="hard"),
    args(lambda: randn(2, 10, 7)),
    edit=("score", {"bias": False}),
    styles="a string looked up in a module table of functions, kept under the same name",
)


# --- Keywords gathered in a local dict, spread into every block ---------------------------------


class TemporalBlock(nn.Module):
    def __init__(self, c_in, c_out, dilation=1, norm="batch", nonlin="relu"):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 3, padding=dilation, dilation=dilation)
        if norm == "batch":
            self.norm = nn.BatchNorm1d(c_out)
        elif norm == "group":
            self.norm = nn.GroupNorm(1, c_out)
        else:
            self.norm = nn.Identity()
        nonlins = {"relu": nn.ReLU, "gelu": nn.GELU, "prelu": lambda: nn.PReLU(c_out)}
        self.act = nonlins[nonlin]()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class SpeechDenoiser(nn.Module):
    """A dilated 1-D stack whose blocks share keywords read off a namespace."""

    def __init__(self, hp):
        super().__init__()
        shared = {"norm": hp.norm_kind, "nonlin": hp.nonlin}
        c = hp.channels
        self.blocks = nn.Sequential(
            TemporalBlock(1, c, 1, **shared),
            TemporalBlock(c, c, 2, **shared),
            TemporalBlock(c, c, 4, **shared),
        )
        self.head = nn.Conv1d(c, 1, 1)

    def forward(self, wav):
        return self.head(self.blocks(wav))


case(
    "namespace_keywords_spread",
    lambda: SpeechDenoiser(SimpleNamespace(channels=6, norm_kind="group", nonlin="gelu")),
    args(lambda: randn(2, 1, 20)),
    edit=("head", {"bias": False}),
    styles="namespace fields gathered in a local dict literal, spread with ** into blocks",
)


class RowEncoder(nn.Module):
    def __init__(self, d_in, d_out, squash="tanh", use_bias=True):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out, bias=use_bias)
        squashes = {"tanh": nn.Tanh, "softsign": nn.Softsign, "none": nn.Identity}
        self.squash = squashes[squash]()

    def forward(self, x):
        return self.squash(self.fc(x))


class TabularTower(nn.Module):
    """Two row encoders sharing keywords gathered with dict(...) from a config object."""

    def __init__(self, opt):
        super().__init__()
        common = dict(squash=opt.squash, use_bias=opt.bias)
        self.first = RowEncoder(opt.features, opt.hidden, **common)
        self.second = RowEncoder(opt.hidden, opt.hidden, **common)
        self.score = nn.Linear(opt.hidden, 1)

    def forward(self, rows):
        return self.score(self.second(self.first(rows)))


case(
    "dict_call_keywords_spread",
    lambda: TabularTower(SimpleNamespace(features=9, hidden=14, squash="softsign", bias=False)),
    args(lambda: randn(4, 9)),
    edit=("score", {"bias": False}),
    styles="config fields gathered with dict(k=...), spread with ** into two encoders",
)
