"""Models of signals and conditioning: WaveNet's dilated causal stacks, a TCN with weight norm, a DiT
with adaLN modulation and numpy in its constructor, a hypernetwork writing another net's weights."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import weight_norm

from .case import args, case, randn

# --- WaveNet: dilations = [2**i for i in range(layers)] * stacks, CausalConv1d(*args, **kwargs) ---


class CausalConv1d(nn.Conv1d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.left = (self.kernel_size[0] - 1) * self.dilation[0]

    def forward(self, x):
        return super().forward(F.pad(x, (self.left, 0)))


class ResidualLayer(nn.Module):
    def __init__(self, residual_channels, gate_channels, skip_channels, kernel_size, dilation):
        super().__init__()
        self.conv = weight_norm(
            CausalConv1d(residual_channels, gate_channels, kernel_size, dilation=dilation)
        )
        self.res = nn.Conv1d(gate_channels // 2, residual_channels, 1)
        self.skip = nn.Conv1d(gate_channels // 2, skip_channels, 1)

    def forward(self, x):
        h = self.conv(x)
        a, b = h.chunk(2, dim=1)
        h = torch.tanh(a) * torch.sigmoid(b)
        return (x + self.res(h)) * math.sqrt(0.5), self.skip(h)


class WaveNet(nn.Module):
    def __init__(
        self,
        layers=10,
        stacks=2,
        residual_channels=64,
        gate_channels=128,
        skip_channels=64,
        kernel_size=2,
        out_channels=256,
    ):
        super().__init__()
        assert layers % stacks == 0
        layers_per_stack = layers // stacks
        self.first_conv = nn.Conv1d(1, residual_channels, 1)
        self.conv_layers = nn.ModuleList()
        for layer in range(layers):
            dilation = 2 ** (layer % layers_per_stack)
            self.conv_layers.append(
                ResidualLayer(
                    residual_channels, gate_channels, skip_channels, kernel_size, dilation
                )
            )
        self.last_conv_layers = nn.ModuleList(
            [
                nn.ReLU(inplace=True),
                nn.Conv1d(skip_channels, skip_channels, 1),
                nn.ReLU(inplace=True),
                nn.Conv1d(skip_channels, out_channels, 1),
            ]
        )

    def receptive_field(self):
        return sum(layer.conv.left for layer in self.conv_layers) + 1

    def forward(self, x):
        x = self.first_conv(x)
        skips = 0
        for f in self.conv_layers:
            x, h = f(x)
            skips = skips + h
        x = skips * math.sqrt(1.0 / len(self.conv_layers))
        for f in self.last_conv_layers:
            x = f(x)
        return x


case(
    "wavenet_dilations",
    lambda: WaveNet(
        layers=6, stacks=2, residual_channels=8, gate_channels=16, skip_channels=8, out_channels=16
    ),
    args(lambda: randn(1, 1, 64)),
    edit=("last_conv_layers.0", {"inplace": False}),
    styles="2 ** (layer % layers_per_stack), Conv1d subclass (*args, **kwargs), weight_norm, (x, skip) tuples",
)

# --- TCN (Bai et al.): num_channels list, Chomp1d, weight_norm, downsample under a condition ------


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, : -self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(
            nn.Conv1d(
                n_inputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation
            )
        )
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm(
            nn.Conv1d(
                n_outputs, n_outputs, kernel_size, stride=stride, padding=padding, dilation=dilation
            )
        )
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(
            self.conv1,
            self.chomp1,
            self.relu1,
            self.dropout1,
            self.conv2,
            self.chomp2,
            self.relu2,
            self.dropout2,
        )
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2**i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [
                TemporalBlock(
                    in_channels,
                    out_channels,
                    kernel_size,
                    stride=1,
                    dilation=dilation_size,
                    padding=(kernel_size - 1) * dilation_size,
                    dropout=dropout,
                )
            ]
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


case(
    "tcn_weight_norm",
    lambda: TemporalConvNet(4, [8, 8, 12], kernel_size=3, dropout=0.1),
    args(lambda: randn(2, 4, 40)),
    edit=("network.0.dropout1", {"p": 0.3}),
    styles="num_channels list, padding=(k-1)*dilation, the same modules at two paths, weight_norm",
)

# --- DiT block: adaLN-Zero modulation, sinusoidal timestep embedder, class-dropout embedder -------


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden_size, frequency_embedding_size=256):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(frequency_embedding_size, hidden_size, bias=True),
            nn.SiLU(),
            nn.Linear(hidden_size, hidden_size, bias=True),
        )
        self.frequency_embedding_size = frequency_embedding_size

    @staticmethod
    def timestep_embedding(t, dim, max_period=10000):
        half = dim // 2
        freqs = torch.exp(
            -math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half
        ).to(device=t.device)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, t):
        return self.mlp(self.timestep_embedding(t, self.frequency_embedding_size))


class LabelEmbedder(nn.Module):
    def __init__(self, num_classes, hidden_size, dropout_prob):
        super().__init__()
        use_cfg_embedding = dropout_prob > 0
        self.embedding_table = nn.Embedding(num_classes + use_cfg_embedding, hidden_size)
        self.num_classes = num_classes
        self.dropout_prob = dropout_prob

    def forward(self, labels, train):
        if train and self.dropout_prob > 0:
            drop_ids = torch.rand(labels.shape[0], device=labels.device) < self.dropout_prob
            labels = torch.where(drop_ids, self.num_classes, labels)
        return self.embedding_table(labels)


class DiTBlock(nn.Module):
    def __init__(self, hidden_size, num_heads, mlp_ratio=4.0, **block_kwargs):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(hidden_size, num_heads, batch_first=True, **block_kwargs)
        self.norm2 = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        mlp_hidden_dim = int(hidden_size * mlp_ratio)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_size, mlp_hidden_dim),
            nn.GELU(approximate="tanh"),
            nn.Linear(mlp_hidden_dim, hidden_size),
        )
        self.adaLN_modulation = nn.Sequential(
            nn.SiLU(), nn.Linear(hidden_size, 6 * hidden_size, bias=True)
        )

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(
            c
        ).chunk(6, dim=1)
        h = modulate(self.norm1(x), shift_msa, scale_msa)
        x = x + gate_msa.unsqueeze(1) * self.attn(h, h, h, need_weights=False)[0]
        return x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))


class DiT(nn.Module):
    def __init__(
        self,
        input_size=32,
        patch_size=2,
        in_channels=4,
        hidden_size=1152,
        depth=28,
        num_heads=16,
        mlp_ratio=4.0,
        class_dropout_prob=0.1,
        num_classes=1000,
        learn_sigma=True,
    ):
        super().__init__()
        self.learn_sigma = learn_sigma
        self.in_channels = in_channels
        self.out_channels = in_channels * 2 if learn_sigma else in_channels
        self.patch_size = patch_size
        self.x_embedder = nn.Conv2d(
            in_channels, hidden_size, kernel_size=patch_size, stride=patch_size
        )
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size, class_dropout_prob)
        num_patches = (input_size // patch_size) ** 2
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, hidden_size), requires_grad=False)
        grid = np.arange(int(num_patches**0.5), dtype=np.float32)
        pe = np.sin(np.outer(np.arange(num_patches), np.linspace(0, 1, hidden_size)) + grid.mean())
        self.pos_embed.data.copy_(torch.from_numpy(pe).float().unsqueeze(0))
        self.blocks = nn.ModuleList(
            [DiTBlock(hidden_size, num_heads, mlp_ratio=mlp_ratio) for _ in range(depth)]
        )
        self.final_norm = nn.LayerNorm(hidden_size, elementwise_affine=False, eps=1e-6)
        self.final_linear = nn.Linear(
            hidden_size, patch_size * patch_size * self.out_channels, bias=True
        )

    def unpatchify(self, x):
        c, p = self.out_channels, self.patch_size
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(shape=(x.shape[0], h, w, p, p, c))
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(shape=(x.shape[0], c, h * p, h * p))

    def forward(self, x, t, y):
        x = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y, self.training)
        for block in self.blocks:
            x = block(x, c)
        return self.unpatchify(self.final_linear(self.final_norm(x)))


case(
    "dit_adaln",
    lambda: DiT(
        input_size=8,
        patch_size=2,
        in_channels=4,
        hidden_size=32,
        depth=2,
        num_heads=4,
        num_classes=10,
    ),
    args(lambda: randn(2, 4, 8, 8), lambda: torch.tensor([10, 500]), lambda: torch.tensor([1, 7])),
    edit=("final_norm", {"eps": 1e-5}),
    styles="numpy in the constructor, num_classes + use_cfg_embedding (bool), forward(x, t, y), **block_kwargs",
)

# --- Hypernetwork: a net that writes a target MLP's weights (functional calls) -------------------


class HyperNetwork(nn.Module):
    def __init__(self, z_dim, target_sizes, hidden=64):
        super().__init__()
        self.target_sizes = list(target_sizes)
        self.shapes = [(o, i) for i, o in zip(self.target_sizes[:-1], self.target_sizes[1:])]
        n_out = sum(o * i + o for o, i in self.shapes)
        self.body = nn.Sequential(nn.Linear(z_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, z, x):
        params = self.body(z)
        start = 0
        for k, (o, i) in enumerate(self.shapes):
            w = params[start : start + o * i].view(o, i)
            start += o * i
            b = params[start : start + o]
            start += o
            x = F.linear(x, w, b)
            if k < len(self.shapes) - 1:
                x = F.relu(x)
        return x


case(
    "hypernetwork",
    lambda: HyperNetwork(6, (3, 16, 16, 1), hidden=32),
    args(lambda: randn(6), lambda: randn(10, 3, seed=1)),
    edit=("body.1", {"inplace": True}),
    styles="target_sizes list zipped into shapes, weights made in forward (F.linear), forward(z, x)",
)
