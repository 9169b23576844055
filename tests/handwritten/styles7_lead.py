"""Keywords a block hands to a layer of its own that takes them through ``**kwargs``: a
spectrogram encoder's norm choice and dropout handed to a stage that passes its ``**unit_kw``
to each unit, and a message-passing encoder's activation name handed to a layer that keeps an
MLP's keywords in ``**mlp_kw``. The value is read off the layer's form, in its ``**kwargs``."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn

# --- A spectrogram encoder: norm and dropout through a stage's **unit_kw ---------------------

_NORMS = {"batch": nn.BatchNorm1d, "instance": nn.InstanceNorm1d}


class ConvUnit(nn.Module):
    def __init__(self, c_in, c_out, norm="batch", p=0.0):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, 3, padding=1)
        self.norm = _NORMS[norm](c_out)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(torch.relu(self.norm(self.conv(x))))


class UnitStage(nn.Module):
    def __init__(self, c_in, c_out, depth, **unit_kw):
        super().__init__()
        self.units = nn.Sequential(
            *[ConvUnit(c_in if i == 0 else c_out, c_out, **unit_kw) for i in range(depth)]
        )

    def forward(self, x):
        return self.units(x)


class SpecEncoder(nn.Module):
    def __init__(self, n_mels, width, n_out, norm="batch", dropout=0.1):
        super().__init__()
        self.stage = UnitStage(n_mels, width, 2, norm=norm, p=dropout)
        self.head = nn.Linear(width, n_out)

    def forward(self, spec):
        return self.head(self.stage(spec).mean(-1))


case(
    "spec_encoder_unit_kwargs",
    lambda: SpecEncoder(12, 16, 5, norm="instance", dropout=0.25),
    args(lambda: randn(2, 12, 20)),
    edit=("", {"dropout": 0.3}),
    styles="a norm name and a dropout handed to a stage that passes **unit_kw to its units",
)

# --- A message-passing encoder: an activation name through a layer's **mlp_kw ----------------


class EdgeMLP(nn.Module):
    def __init__(self, dim, hidden, act="relu"):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(2 * dim, hidden), nn.Linear(hidden, dim)
        self.act = getattr(torch, act)

    def forward(self, pair):
        return self.fc2(self.act(self.fc1(pair)))


class MessageLayer(nn.Module):
    def __init__(self, dim, **mlp_kw):
        super().__init__()
        self.mlp = EdgeMLP(dim, **mlp_kw)

    def forward(self, h, adj):
        n = h.shape[1]
        pair = torch.cat(
            [h.unsqueeze(2).expand(-1, -1, n, -1), h.unsqueeze(1).expand(-1, n, -1, -1)], -1
        )
        return h + (adj.unsqueeze(-1) * self.mlp(pair)).sum(2)


class MessageEncoder(nn.Module):
    def __init__(self, dim, hidden, layers=2, act="relu"):
        super().__init__()
        self.layers = nn.ModuleList(
            [MessageLayer(dim, hidden=hidden, act=act) for _ in range(layers)]
        )

    def forward(self, h, adj):
        for layer in self.layers:
            h = layer(h, adj)
        return h


case(
    "message_encoder_mlp_kwargs",
    lambda: MessageEncoder(8, 12, layers=2, act="tanh"),
    args(lambda: randn(2, 5, 8), lambda: (randn(2, 5, 5, seed=1) > 0).float()),
    edit=("layers.0", {"hidden": 16}),
    styles="an activation name handed to a layer that keeps an MLP's keywords in **mlp_kw",
)
