"""Layers built in the class's own helper methods, and lists read in consecutive pairs.

Research code often makes its layers in a method of its own class (``self.body =
self._make_body(...)``, a static ``_head`` factory, ``type(self).make_stem``, a method called once
per item of a list in a loop), and builds a stack of layers from a list of sizes by zipping two
slices of it (``zip(sizes[:-1], sizes[1:])``, ``zip(chs, chs[1:])``, reversed for a decoder). The
constructor itself then shows nothing of what its arguments become."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn

# --- A 1-d residual block built by a method: a padding mode looked up in a local dict ----------


class PaddedResBlock1d(nn.Module):
    def __init__(self, channels, pad_mode, norm, use_dropout, conv_bias):
        super().__init__()
        self.body = self._make_body(channels, pad_mode, norm, use_dropout, conv_bias)

    def _make_body(self, ch, pad_mode, norm, use_dropout, conv_bias):
        pads = {"reflect": nn.ReflectionPad1d, "replicate": nn.ReplicationPad1d}
        layers = []
        for k in range(2):
            padding = 0
            if pad_mode in pads:
                layers.append(pads[pad_mode](2))
            elif pad_mode == "zeros":
                padding = 2
            else:
                raise ValueError(f"unknown padding {pad_mode!r}")
            layers += [nn.Conv1d(ch, ch, 5, padding=padding, bias=conv_bias), norm(ch)]
            if k == 0:
                layers.append(nn.GELU())
                if use_dropout:
                    layers.append(nn.Dropout(0.2))
        return nn.Sequential(*layers)

    def forward(self, x):
        return x + self.body(x)


class WaveformCleaner(nn.Module):
    def __init__(self, channels=12, n_blocks=2, pad_mode="zeros"):
        super().__init__()
        self.inp = nn.Conv1d(1, channels, 7, padding=3)
        self.blocks = nn.Sequential(
            *[
                PaddedResBlock1d(channels, pad_mode, nn.BatchNorm1d, True, False)
                for _ in range(n_blocks)
            ]
        )
        self.out = nn.Conv1d(channels, 1, 7, padding=3)

    def forward(self, x):
        return self.out(self.blocks(self.inp(x)))


case(
    "waveform_cleaner_method_blocks",
    lambda: WaveformCleaner(12, 2, "zeros"),
    args(lambda: randn(2, 1, 40)),
    edit=("inp", {"bias": False}),
    styles="layers built in a method of the class; a mode looked up in a local dict",
)

# --- A tiny ResNet whose stages come from _make_stage, a static head factory ------------------


class TinyStageNet(nn.Module):
    def __init__(self, stem_width=8, stage_width=16, n_convs=2, n_classes=5, head_drop=0.1):
        super().__init__()
        self.stem = type(self).make_stem(3, stem_width)
        self.width = stem_width
        self.stage = self._make_stage(stage_width, n_convs)
        self.head = self._head(stage_width, n_classes, head_drop)

    @classmethod
    def make_stem(cls, in_ch, width):
        return nn.Sequential(nn.Conv2d(in_ch, width, 3, stride=2, padding=1), nn.ReLU())

    def _make_stage(self, width, n_convs):
        convs = []
        for _ in range(n_convs):
            convs += [nn.Conv2d(self.width, width, 3, padding=1), nn.ReLU()]
            self.width = width
        return nn.Sequential(*convs)

    @staticmethod
    def _head(d, n, p):
        return nn.Sequential(nn.Flatten(), nn.Dropout(p), nn.Linear(d, n))

    def forward(self, x):
        return self.head(self.stage(self.stem(x)).mean((2, 3), keepdim=True))


case(
    "tiny_stagenet_make_stage",
    lambda: TinyStageNet(6, 10, 3, 4, 0.25),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("stem.0", {"bias": False}),
    styles="a classmethod stem, a _make_stage method, a static head factory",
)

# --- Heads added one per output size by a method called in a loop -----------------------------


class MultiOutputRegressor(nn.Module):
    def __init__(self, in_dim, feat=24, head_sizes=(1, 3)):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, feat), nn.Tanh())
        self.heads = nn.ModuleList()
        for n in head_sizes:
            self.add_head(feat, n)

    def add_head(self, feat, n_out):
        self.heads.append(nn.Linear(feat, n_out))

    def forward(self, x):
        h = self.trunk(x)
        return [head(h) for head in self.heads]


case(
    "multi_output_add_head",
    lambda: MultiOutputRegressor(7, 20, (2, 5, 1)),
    args(lambda: randn(3, 7)),
    edit=("trunk.0", {"bias": False}),
    styles="a method called once per item of a list, in a loop",
)

# --- An MLP as a Sequential subclass: sizes zipped in slices, dropout appended when asked -------


class PairMLP(nn.Sequential):
    def __init__(self, sizes, act=nn.SiLU, dropout=0.0, bias=True):
        layers = []
        for d_in, d_out in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(d_in, d_out, bias=bias), act()]
            if dropout:
                layers.append(nn.Dropout(dropout))
        super().__init__(*layers)


case(
    "pair_mlp_zipped_slices",
    lambda: PairMLP([9, 32, 16, 4], dropout=0.1),
    args(lambda: randn(5, 9)),
    edit=("0", {"bias": False}),
    styles="a list zipped in slices (sizes[:-1], sizes[1:]); a dropout appended when asked",
)

# --- A 1-d conv stack in a comprehension: zip(chs, chs[1:]) -----------------------------------


class ConvStack1d(nn.Module):
    def __init__(self, channels, kernel=3):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv1d(a, b, kernel, padding=kernel // 2) for a, b in zip(channels, channels[1:])]
        )

    def forward(self, x):
        for conv in self.convs:
            x = torch.relu(conv(x))
        return x


case(
    "conv_stack_zip_comprehension",
    lambda: ConvStack1d((2, 8, 8, 16, 4), kernel=5),
    args(lambda: randn(2, 2, 30)),
    edit=("convs.0", {"bias": False}),
    styles="a comprehension over zip(chs, chs[1:])",
)

# --- An autoencoder whose decoder walks the widths back: zip(w[1:], w[:-1]) --------------------


class MirrorAutoencoder(nn.Module):
    def __init__(self, widths=(20, 12, 6)):
        super().__init__()
        self.encoder = nn.ModuleList()
        for a, b in zip(widths[:-1], widths[1:]):
            self.encoder.append(nn.Linear(a, b))
        self.decoder = nn.ModuleList()
        for a, b in zip(widths[1:], widths[:-1]):
            self.decoder.insert(0, nn.Linear(a, b))

    def forward(self, x):
        for f in self.encoder:
            x = torch.relu(f(x))
        for f in self.decoder:
            x = f(x)
        return x


case(
    "mirror_autoencoder_zipped",
    lambda: MirrorAutoencoder((16, 10, 7, 3)),
    args(lambda: randn(4, 16)),
    edit=("encoder.0", {"bias": False}),
    styles="a list zipped in slices forwards for the encoder and backwards for the decoder",
)
