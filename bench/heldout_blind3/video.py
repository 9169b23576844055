"""Video nets (C3D, R(2+1)D, a divided space-time attention net) and a PWC-style flow net."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class C3D(nn.Module):
    """C3D, shrunk: 3x3x3 convs everywhere, the first pool keeps time."""

    def __init__(self, num_classes=10, widths=(16, 32, 64), dropout=0.5):
        super().__init__()
        layers = OrderedDict()
        c_in = 3
        for i, w in enumerate(widths):
            layers[f"conv{i + 1}"] = nn.Conv3d(c_in, w, kernel_size=3, padding=1)
            layers[f"relu{i + 1}"] = nn.ReLU(inplace=True)
            pool = (1, 2, 2) if i == 0 else (2, 2, 2)
            layers[f"pool{i + 1}"] = nn.MaxPool3d(pool, stride=pool)
            c_in = w
        self.features = nn.Sequential(layers)
        self.fc6 = nn.Linear(c_in, 128)
        self.dropout = nn.Dropout(p=dropout)
        self.fc7 = nn.Linear(128, num_classes)

    def forward(self, x):
        h = self.features(x)
        h = F.adaptive_avg_pool3d(h, 1).flatten(1)
        return self.fc7(self.dropout(F.relu(self.fc6(h))))


class SpatioTemporalConv(nn.Module):
    # the (2+1)D factorisation: the middle width keeps the parameter count of the full 3D conv
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
        super().__init__()
        t, k = kernel_size[0], kernel_size[1]
        mid = int(
            math.floor(
                (t * k * k * in_channels * out_channels) / (k * k * in_channels + t * out_channels)
            )
        )
        s = stride if isinstance(stride, tuple) else (stride, stride, stride)
        p = padding if isinstance(padding, tuple) else (padding, padding, padding)
        self.spatial_conv = nn.Conv3d(
            in_channels, mid, (1, k, k), stride=(1, s[1], s[2]), padding=(0, p[1], p[2]), bias=bias
        )
        self.bn = nn.BatchNorm3d(mid)
        self.relu = nn.ReLU()
        self.temporal_conv = nn.Conv3d(
            mid, out_channels, (t, 1, 1), stride=(s[0], 1, 1), padding=(p[0], 0, 0), bias=bias
        )

    def forward(self, x):
        return self.temporal_conv(self.relu(self.bn(self.spatial_conv(x))))


class SpatioTemporalResBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, downsample=False):
        super().__init__()
        self.downsample = downsample
        padding = kernel_size // 2
        ks = (kernel_size,) * 3
        if self.downsample:
            self.downsampleconv = SpatioTemporalConv(in_channels, out_channels, (1, 1, 1), stride=2)
            self.downsamplebn = nn.BatchNorm3d(out_channels)
            self.conv1 = SpatioTemporalConv(
                in_channels, out_channels, ks, padding=padding, stride=2
            )
        else:
            self.conv1 = SpatioTemporalConv(in_channels, out_channels, ks, padding=padding)
        self.bn1 = nn.BatchNorm3d(out_channels)
        self.relu1 = nn.ReLU()
        self.conv2 = SpatioTemporalConv(out_channels, out_channels, ks, padding=padding)
        self.bn2 = nn.BatchNorm3d(out_channels)
        self.outrelu = nn.ReLU()

    def forward(self, x):
        res = self.relu1(self.bn1(self.conv1(x)))
        res = self.bn2(self.conv2(res))
        if self.downsample:
            x = self.downsamplebn(self.downsampleconv(x))
        return self.outrelu(x + res)


class R2Plus1DNet(nn.Module):
    def __init__(self, num_classes, layer_sizes=[1, 1, 1], block_type=SpatioTemporalResBlock):  # noqa: B006
        super().__init__()
        self.conv1 = SpatioTemporalConv(3, 16, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3))
        self.conv2 = nn.Sequential(*[block_type(16, 16, 3) for _ in range(layer_sizes[0])])
        self.conv3 = nn.Sequential(
            block_type(16, 32, 3, downsample=True),
            *[block_type(32, 32, 3) for _ in range(layer_sizes[1] - 1)],
        )
        self.conv4 = nn.Sequential(
            block_type(32, 64, 3, downsample=True),
            *[block_type(64, 64, 3) for _ in range(layer_sizes[2] - 1)],
        )
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.linear = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.conv4(self.conv3(self.conv2(self.conv1(x))))
        return self.linear(self.pool(x).view(-1, 64))


class PatchEmbed3D(nn.Module):
    def __init__(self, img_size=32, patch_size=8, in_chans=3, embed_dim=64):
        super().__init__()
        self.num_patches = (img_size // patch_size) ** 2
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        b, c, t, h, w = x.shape
        x = x.transpose(1, 2).reshape(b * t, c, h, w)
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x, t


class DividedBlock(nn.Module):
    """TimeSformer's block: attend over time per patch, then over space per frame."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, norm_layer=nn.LayerNorm):
        super().__init__()
        self.temporal_norm = norm_layer(dim)
        self.temporal_attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.temporal_fc = nn.Linear(dim, dim)
        self.norm1 = norm_layer(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, batch_first=True)
        self.norm2 = norm_layer(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x, b, t):
        # x: (b, t*n, d)
        n = x.shape[1] // t
        d = x.shape[2]
        xt = x.reshape(b, t, n, d).permute(0, 2, 1, 3).reshape(b * n, t, d)
        h = self.temporal_norm(xt)
        h = self.temporal_attn(h, h, h, need_weights=False)[0]
        xt = xt + self.temporal_fc(h)
        xs = xt.reshape(b, n, t, d).permute(0, 2, 1, 3).reshape(b * t, n, d)
        h = self.norm1(xs)
        xs = xs + self.attn(h, h, h, need_weights=False)[0]
        xs = xs + self.mlp(self.norm2(xs))
        return xs.reshape(b, t * n, d)


class TimeSformerLite(nn.Module):
    def __init__(self, img_size=32, patch_size=8, num_frames=4, num_classes=7, embed_dim=64,
                 depth=2, num_heads=4, **kwargs):  # fmt: skip
        super().__init__()
        self.patch_embed = PatchEmbed3D(img_size, patch_size, 3, embed_dim)
        n = self.patch_embed.num_patches
        self.pos_embed = nn.Parameter(torch.zeros(1, n, embed_dim))
        self.time_embed = nn.Parameter(torch.zeros(1, num_frames, embed_dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.blocks = nn.ModuleList(
            [DividedBlock(embed_dim, num_heads, **kwargs) for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        b = x.shape[0]
        x, t = self.patch_embed(x)
        x = x + self.pos_embed
        n, d = x.shape[1], x.shape[2]
        x = x.reshape(b, t, n, d) + self.time_embed[:, :t, None, :]
        x = x.reshape(b, t * n, d)
        for blk in self.blocks:
            x = blk(x, b, t)
        return self.head(self.norm(x).mean(1))


@heldout("c3d_lite", example=lambda: ((rand(2, 3, 8, 32, 32),), {}))
def c3d_lite():
    torch.manual_seed(0)
    return C3D(num_classes=10)


@heldout("r2plus1d_lite", example=lambda: ((rand(2, 3, 8, 32, 32, seed=1),), {}))
def r2plus1d_lite():
    torch.manual_seed(1)
    return R2Plus1DNet(num_classes=6)


@heldout("timesformer_lite", example=lambda: ((rand(2, 3, 4, 32, 32, seed=2),), {}))
def timesformer_lite():
    torch.manual_seed(2)
    return TimeSformerLite(mlp_ratio=2.0)


# ----------------------------------------------------------------- optical flow (PWC-Net-lite)


def conv(in_planes, out_planes, kernel_size=3, stride=1, dilation=1):
    return nn.Sequential(
        nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding=((kernel_size - 1) * dilation) // 2,
                  dilation=dilation, bias=True),
        nn.LeakyReLU(0.1),
    )  # fmt: skip


class Correlation(nn.Module):
    """Cost volume over a (2d+1)^2 window, written with unfold instead of a CUDA kernel."""

    def __init__(self, max_displacement=4):
        super().__init__()
        self.d = max_displacement

    def forward(self, f1, f2):
        b, c, h, w = f1.shape
        k = 2 * self.d + 1
        f2p = F.pad(f2, [self.d] * 4)
        patches = F.unfold(f2p, kernel_size=k).view(b, c, k * k, h, w)
        return (f1.unsqueeze(2) * patches).mean(1)


class FeaturePyramid(nn.Module):
    def __init__(self, chans=(3, 16, 32, 48)):
        super().__init__()
        self.levels = nn.ModuleList(
            nn.Sequential(conv(a, b, stride=2), conv(b, b)) for a, b in zip(chans[:-1], chans[1:])
        )

    def forward(self, x):
        out = []
        for lvl in self.levels:
            x = lvl(x)
            out.append(x)
        return out[::-1]


class FlowEstimator(nn.Module):
    def __init__(self, ch_in):
        super().__init__()
        self.convs = nn.Sequential(conv(ch_in, 64), conv(64, 48), conv(48, 32))
        self.predict_flow = nn.Conv2d(32, 2, 3, padding=1)

    def forward(self, x):
        feat = self.convs(x)
        return feat, self.predict_flow(feat)


def warp(x, flow):
    b, _, h, w = x.shape
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    grid = torch.stack((xx, yy), 0).float().to(x).unsqueeze(0) + flow
    gx = 2.0 * grid[:, 0] / max(w - 1, 1) - 1.0
    gy = 2.0 * grid[:, 1] / max(h - 1, 1) - 1.0
    return F.grid_sample(x, torch.stack((gx, gy), -1), align_corners=True)


class PWCLite(nn.Module):
    def __init__(self, md=4, pyramid=(3, 16, 32, 48)):
        super().__init__()
        self.pyramid = FeaturePyramid(pyramid)
        self.corr = Correlation(md)
        nd = (2 * md + 1) ** 2
        self.estimators = nn.ModuleList()
        for i, c in enumerate(pyramid[:0:-1]):
            extra = 0 if i == 0 else c + 2
            self.estimators.append(FlowEstimator(nd + extra))

    def forward(self, im1, im2):
        p1, p2 = self.pyramid(im1), self.pyramid(im2)
        flow = None
        for i, (a, b) in enumerate(zip(p1, p2)):
            if flow is None:
                _, flow = self.estimators[i](self.corr(a, b))
            else:
                flow = F.interpolate(flow, scale_factor=2, mode="bilinear", align_corners=False) * 2
                c = self.corr(a, warp(b, flow))
                _, res = self.estimators[i](torch.cat([c, a, flow], 1))
                flow = flow + res
        return flow


@heldout("pwc_lite", example=lambda: ((rand(1, 3, 32, 32), rand(1, 3, 32, 32, seed=1)), {}))
def pwc_lite():
    torch.manual_seed(3)
    return PWCLite(md=3)
