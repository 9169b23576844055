"""Constructor habits that hide an argument behind what it builds: a flag that adds, drops or
chooses a layer (SIREN's ``outermost_linear``, optional Fourier features, V-Net's ``elu``), a flag
handed down to every child (GraphSAGE's ``normalize``), per-field sizes summed into one table
(DeepFM's ``field_dims`` and its offsets buffer), a dict of tower specs, an options namespace,
widths that are products or conv arithmetic of arguments (DiT's final layer, a conformer's
subsampling) and a buffer whose shape the arguments make (N-BEATS' seasonality basis)."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- DeepFM: one embedding table for all fields, offsets from np.cumsum(field_dims) -------------


class FeaturesEmbedding(nn.Module):
    def __init__(self, field_dims, embed_dim):
        super().__init__()
        self.embedding = nn.Embedding(sum(field_dims), embed_dim)
        offsets = np.array((0, *np.cumsum(field_dims)[:-1]), dtype=np.int64)
        self.register_buffer("offsets", torch.from_numpy(offsets))

    def forward(self, x):
        return self.embedding(x + self.offsets.unsqueeze(0))


class DeepFM(nn.Module):
    def __init__(self, field_dims, embed_dim=8, mlp_dims=(32, 16), dropout=0.1):
        super().__init__()
        self.linear = FeaturesEmbedding(field_dims, 1)
        self.embedding = FeaturesEmbedding(field_dims, embed_dim)
        layers = []
        width = len(field_dims) * embed_dim
        for d in mlp_dims:
            layers += [nn.Linear(width, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Dropout(dropout)]
            width = d
        layers.append(nn.Linear(width, 1))
        self.mlp = nn.Sequential(*layers)

    def forward(self, x):
        e = self.embedding(x)
        fm = 0.5 * ((e.sum(1) ** 2) - (e**2).sum(1)).sum(1, keepdim=True)
        return torch.sigmoid(self.linear(x).sum(1) + fm + self.mlp(e.flatten(1))).squeeze(1)


def _fields():
    g = torch.Generator().manual_seed(0)
    return torch.stack([torch.randint(0, n, (4,), generator=g) for n in (5, 7, 3)], 1)


case(
    "deepfm_field_dims",
    lambda: DeepFM([5, 7, 3], embed_dim=4, mlp_dims=(16, 8)),
    args(_fields),
    edit=("mlp.0", {"bias": False}),
    styles="field_dims summed into one table, offsets buffer from np.cumsum",
)

# --- SIREN: sine layers, a last Linear only when outermost_linear ------------------------------


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, is_first=False, omega_0=30.0):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.linear = nn.Linear(in_features, out_features)
        bound = 1 / in_features if is_first else math.sqrt(6 / in_features) / omega_0
        with torch.no_grad():
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.omega_0 * self.linear(x))


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features,
                 outermost_linear=False, first_omega_0=30.0, hidden_omega_0=30.0):  # fmt: skip
        super().__init__()
        net = [SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)]
        for _ in range(hidden_layers):
            net.append(SineLayer(hidden_features, hidden_features, omega_0=hidden_omega_0))
        if outermost_linear:
            net.append(nn.Linear(hidden_features, out_features))
        else:
            net.append(SineLayer(hidden_features, out_features, omega_0=hidden_omega_0))
        self.net = nn.Sequential(*net)

    def forward(self, coords):
        return self.net(coords)


case(
    "siren_outermost_linear",
    lambda: Siren(2, 32, 2, 3, outermost_linear=True),
    args(lambda: randn(16, 2)),
    edit=("net.3", {"bias": False}),
    styles="a flag that swaps the last layer for a Linear",
)

# --- PINN: an MLP with optional random Fourier features ----------------------------------------


class FourierEmbedding(nn.Module):
    def __init__(self, in_dim, num_freqs, scale=1.0):
        super().__init__()
        self.register_buffer("B", torch.randn(in_dim, num_freqs) * scale)

    def forward(self, x):
        p = 2 * math.pi * x @ self.B
        return torch.cat([torch.sin(p), torch.cos(p)], -1)


class PINN(nn.Module):
    def __init__(self, in_dim=2, out_dim=1, width=64, depth=4, use_fourier=False, num_freqs=16):
        super().__init__()
        if use_fourier:
            self.embedding = FourierEmbedding(in_dim, num_freqs)
            first = 2 * num_freqs
        else:
            first = in_dim
        dims = [first] + [width] * depth
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(width, out_dim)
        self.use_fourier = use_fourier

    def forward(self, x):
        if self.use_fourier:
            x = self.embedding(x)
        for layer in self.layers:
            x = torch.tanh(layer(x))
        return self.out(x)


case(
    "pinn_fourier",
    lambda: PINN(2, 1, width=24, depth=3, use_fourier=True, num_freqs=8),
    args(lambda: randn(10, 2)),
    edit=("out", {"bias": False}),
    styles="a submodule made only under a flag",
)

# --- V-Net: ELU or PReLU chosen by a flag ------------------------------------------------------


def _activation(elu, nchan):
    return nn.ELU(inplace=True) if elu else nn.PReLU(nchan)


class LUConv(nn.Module):
    def __init__(self, nchan, elu):
        super().__init__()
        self.relu1 = _activation(elu, nchan)
        self.conv1 = nn.Conv3d(nchan, nchan, kernel_size=5, padding=2)
        self.bn1 = nn.BatchNorm3d(nchan)

    def forward(self, x):
        return self.relu1(self.bn1(self.conv1(x)))


class DownTransition(nn.Module):
    def __init__(self, in_chans, n_convs, elu, dropout=False):
        super().__init__()
        out_chans = 2 * in_chans
        self.down_conv = nn.Conv3d(in_chans, out_chans, kernel_size=2, stride=2)
        self.bn1 = nn.BatchNorm3d(out_chans)
        self.relu1 = _activation(elu, out_chans)
        self.relu2 = _activation(elu, out_chans)
        self.do1 = nn.Dropout3d() if dropout else nn.Identity()
        self.ops = nn.Sequential(*[LUConv(out_chans, elu) for _ in range(n_convs)])

    def forward(self, x):
        down = self.relu1(self.bn1(self.down_conv(x)))
        return self.relu2(self.ops(self.do1(down)) + down)


case(
    "vnet_down_elu_flag",
    lambda: DownTransition(4, 2, elu=False),
    args(lambda: randn(1, 4, 8, 8, 8)),
    edit=("down_conv", {"bias": False}),
    styles="the activation's class chosen by a flag",
)

# --- GraphSAGE: a normalize flag handed to every conv ------------------------------------------


class DenseSAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, normalize=False, bias=True):
        super().__init__()
        self.normalize = normalize
        self.lin_rel = nn.Linear(in_channels, out_channels, bias=bias)
        self.lin_root = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, adj):
        deg = adj.sum(-1, keepdim=True).clamp(min=1)
        out = self.lin_rel(adj @ x / deg) + self.lin_root(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out


class GraphSAGE(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_layers=2, normalize=False):
        super().__init__()
        dims = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(
            DenseSAGEConv(a, b, normalize=normalize) for a, b in zip(dims[:-1], dims[1:])
        )

    def forward(self, x, adj):
        for i, conv in enumerate(self.convs):
            x = conv(x, adj)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x


def _adj():
    a = (torch.rand(6, 6, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    return ((a + a.T) > 0).float()


case(
    "graphsage_normalize",
    lambda: GraphSAGE(5, 16, 3, num_layers=3, normalize=True),
    args(lambda: randn(6, 5), _adj),
    edit=("convs.0.lin_rel", {"bias": False}),
    styles="a flag handed down to every child",
)
