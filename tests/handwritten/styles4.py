"""More constructor habits that hide an argument behind what it builds (see ``styles3.py``): a
dict of tower specs read with ``.items()`` and ``**``, an options namespace read by attribute,
widths that are products or conv arithmetic of arguments (DiT's final layer, a conformer's conv
subsampling) and a buffer whose shape the arguments make (N-BEATS' seasonality basis)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn

from .case import args, case, randn, tokens

# --- Multi-task towers from a dict of specs ----------------------------------------------------


class Tower(nn.Module):
    def __init__(self, in_dim, hidden=32, out_dim=1, dropout=0.0):
        super().__init__()
        self.fc = nn.Linear(in_dim, hidden)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, out_dim)

    def forward(self, x):
        return self.head(self.drop(torch.relu(self.fc(x))))


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, shared=32, towers=None):
        super().__init__()
        towers = towers or {"ctr": {"hidden": 16, "out_dim": 1}}
        self.shared = nn.Sequential(nn.Linear(in_dim, shared), nn.ReLU())
        self.towers = nn.ModuleDict()
        for name, spec in towers.items():
            self.towers[name] = Tower(shared, **spec)

    def forward(self, x):
        h = self.shared(x)
        return {k: t(h) for k, t in self.towers.items()}


case(
    "multitask_tower_specs",
    lambda: MultiTaskNet(
        10, 24, {"ctr": {"hidden": 8, "out_dim": 1}, "genre": {"hidden": 12, "out_dim": 5}}
    ),
    args(lambda: randn(4, 10)),
    edit=("shared.0", {"bias": False}),
    styles="a dict of specs read with .items() and handed on with **",
)

# --- ELMo-like char encoder: an options namespace read by attribute ----------------------------


class CharEncoder(nn.Module):
    def __init__(self, options, output_dim=32):
        super().__init__()
        self.char_embed = nn.Embedding(options.n_chars, options.char_dim)
        self.convs = nn.ModuleList(nn.Conv1d(options.char_dim, n, w) for w, n in options.filters)
        total = sum(n for _, n in options.filters)
        self.proj = nn.Linear(total, output_dim)

    def forward(self, chars):
        b, t, c = chars.shape
        x = self.char_embed(chars.view(b * t, c)).transpose(1, 2)
        x = torch.cat([conv(x).amax(-1) for conv in self.convs], -1)
        return self.proj(torch.relu(x)).view(b, t, -1)


case(
    "elmo_char_options",
    lambda: CharEncoder(SimpleNamespace(n_chars=40, char_dim=8, filters=[(1, 8), (2, 12)]), 16),
    args(lambda: tokens(2, 3, 6, vocab=40)),
    edit=("proj", {"bias": False}),
    styles="an options namespace read by attribute",
)

# --- DiT final layer: out width a product of arguments -----------------------------------------


class FinalLayer(nn.Module):
    def __init__(self, hidden_size, patch_size, out_channels):
        super().__init__()
        self.norm_final = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(hidden_size, patch_size * patch_size * out_channels)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden_size, 2 * hidden_size))

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        x = self.norm_final(x) * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)
        return self.linear(x)


case(
    "dit_final_layer",
    lambda: FinalLayer(32, 2, 4),
    args(lambda: randn(2, 5, 32), lambda: randn(2, 32, seed=1)),
    edit=("linear", {"bias": False}),
    styles="a width that is a product of arguments",
)

# --- Conformer conv subsampling: the Linear's width from conv arithmetic -----------------------


class Conv2dSubsampling(nn.Module):
    def __init__(self, n_mels, channels, d_model):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, channels, 3, 2), nn.ReLU(), nn.Conv2d(channels, channels, 3, 2), nn.ReLU()
        )
        self.out = nn.Linear(channels * (((n_mels - 1) // 2 - 1) // 2), d_model)

    def forward(self, x):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.shape
        return self.out(x.transpose(1, 2).reshape(b, t, c * f))


case(
    "conformer_subsampling",
    lambda: Conv2dSubsampling(20, 8, 16),
    args(lambda: randn(2, 15, 20)),
    edit=("out", {"bias": False}),
    styles="a width from conv output arithmetic",
)

# --- N-BEATS seasonality block: basis buffers shaped by the arguments --------------------------


class SeasonalityBlock(nn.Module):
    def __init__(self, units, thetas_dim, backcast_length=10, forecast_length=5):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(backcast_length, units), nn.ReLU())
        self.theta = nn.Linear(units, thetas_dim, bias=False)
        p1, p2 = (thetas_dim // 2, thetas_dim // 2) if thetas_dim % 2 == 0 else (
            thetas_dim // 2, thetas_dim // 2 + 1)  # fmt: skip
        for name, length in (("backcast", backcast_length), ("forecast", forecast_length)):
            t = np.arange(length) / length
            cos = np.stack([np.cos(2 * np.pi * i * t) for i in range(p1)])
            sin = np.stack([np.sin(2 * np.pi * i * t) for i in range(p2)])
            basis = torch.tensor(np.concatenate([cos, sin]), dtype=torch.float32)
            self.register_buffer(f"{name}_basis", basis)

    def forward(self, x):
        theta = self.theta(self.fc(x))
        return theta @ self.backcast_basis, theta @ self.forecast_basis


case(
    "nbeats_seasonality",
    lambda: SeasonalityBlock(16, 4, backcast_length=12, forecast_length=6),
    args(lambda: randn(3, 12)),
    edit=("fc.0", {"bias": False}),
    styles="a buffer whose shape the arguments make",
)
