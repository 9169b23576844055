"""Kinds of values a constructor turns into something else before it keeps them: a name chosen
by a helper that returns the function it names (kept under the name's own attribute), and
keywords gathered once in a local dict and spread into every block."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn, tokens

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


# --- Sizes a tensor it keeps was made in, and nothing else keeps --------------------------------


class CoordinateEncoder(nn.Module):
    """A fixed coordinate grid over a map, channels last, projected into features."""

    def __init__(self, grid, features):
        super().__init__()
        axes = [torch.linspace(-1.0, 1.0, n) for n in grid]
        coords = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1)
        self.register_buffer("coords", coords, persistent=False)
        self.proj = nn.Linear(2, features)

    def forward(self, fmap):
        pos = self.proj(self.coords).permute(2, 0, 1)
        return fmap + pos.unsqueeze(0)


case(
    "grid_sizes_in_a_buffer",
    lambda: CoordinateEncoder((5, 7), 6),
    args(lambda: randn(2, 6, 5, 7)),
    edit=("proj", {"bias": False}),
    styles="a list of sizes iterated to make a coordinate buffer, channels last",
)


class SpectralMask(nn.Module):
    """A fixed taper over a spectrogram's (frequency, time) bins, made one axis at a time."""

    def __init__(self, bins, channels):
        super().__init__()
        mask = torch.ones(())
        for n in bins:
            mask = mask.unsqueeze(-1) * torch.hann_window(n + 2, periodic=False)[1:-1]
        self.register_buffer("mask", mask)
        self.mix = nn.Conv2d(channels, channels, 1)

    def forward(self, spec):
        return self.mix(spec * self.mask)


case(
    "sizes_looped_into_a_mask",
    lambda: SpectralMask([6, 5], 3),
    args(lambda: randn(2, 3, 6, 5)),
    edit=("mix", {"bias": False}),
    styles="a list of sizes looped over to make a taper buffer, one axis a turn",
)


class AnchorCenters(nn.Module):
    """Detection anchors: the centres of a feature map's cells, as a (2, H, W) buffer."""

    def __init__(self, feature_size, stride=8):
        super().__init__()
        centres = [(torch.arange(s) + 0.5) * stride for s in feature_size]
        self.register_buffer("centres", torch.stack(torch.meshgrid(*centres, indexing="ij")))

    def forward(self, offsets):
        return self.centres.unsqueeze(0) + offsets


case(
    "sizes_in_a_buffer_no_layers",
    lambda: AnchorCenters([4, 6], stride=8),
    args(lambda: randn(2, 2, 4, 6)),
    edit=("", {"stride": 16}),
    styles="a list of sizes iterated to make the only tensor of a module without layers",
)


# --- A number kept only through one step with a constant; an int compared to choose a layer -----


class PrototypeHead(nn.Module):
    """Cosine logits over class prototypes, sharpened by the inverse of a temperature."""

    def __init__(self, feat, classes, tau):
        super().__init__()
        self.protos = nn.Linear(feat, classes, bias=False)
        self.inv_tau = 1.0 / tau

    def forward(self, x):
        w = F.normalize(self.protos.weight, dim=-1)
        return F.normalize(x, dim=-1) @ w.t() * self.inv_tau


case(
    "reciprocal_kept",
    lambda: PrototypeHead(12, 5, 0.25),
    args(lambda: randn(3, 12)),
    edit=("protos", {"out_features": 4}),
    styles="a temperature kept only as its reciprocal",
)


class RankPool(nn.Module):
    """A pooling head for 1-, 2- or 3-D maps, chosen by comparing the rank with numbers."""

    def __init__(self, rank, channels, margin):
        super().__init__()
        if rank == 1:
            self.pool = nn.AdaptiveMaxPool1d(1)
        elif rank == 2:
            self.pool = nn.AdaptiveMaxPool2d(1)
        elif rank == 3:
            self.pool = nn.AdaptiveMaxPool3d(1)
        self.fc = nn.Linear(channels, channels)
        self.shift = margin + 0.5

    def forward(self, x):
        return self.fc(self.pool(x).flatten(1)) + self.shift


case(
    "rank_compared_and_shift_kept",
    lambda: RankPool(2, 4, 1.25),
    args(lambda: randn(2, 4, 5, 5)),
    edit=("fc", {"bias": False}),
    styles="a rank compared with whole numbers to choose a layer; a margin kept shifted",
)


# --- A torch layer's subclass that reads keywords of its own out of **kwargs --------------------


class CausalConv1d(nn.Conv1d):
    """A 1-D convolution padded on the left only, unless told otherwise by a keyword."""

    def __init__(self, *args, **kwargs):
        if "causal" in kwargs:
            causal = kwargs.pop("causal")
        else:
            causal = True
        super().__init__(*args, **kwargs)
        self.causal = causal
        self.left = (self.kernel_size[0] - 1) * self.dilation[0] if causal else 0

    def forward(self, x):
        return super().forward(F.pad(x, (self.left, 0)))


class WaveStack(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.a = CausalConv1d(1, channels, 3, padding=0, dilation=2)
        self.b = CausalConv1d(channels, 1, 3, padding=1, causal=False, bias=False)

    def forward(self, x):
        return self.b(torch.tanh(self.a(x)))


case(
    "layer_subclass_keyword_tested",
    lambda: WaveStack(5),
    args(lambda: randn(2, 1, 16)),
    edit=("a", {"dilation": 1}),
    styles="a torch layer's subclass taking *args, **kwargs, a keyword of its own tested and popped",
)


class ScaledEmbedding(nn.Embedding):
    """Token embeddings multiplied by a scale read out of the keywords."""

    def __init__(self, *args, **kwargs):
        self.scale = kwargs.pop("scale", 1.0)
        self.tie_name = kwargs.get("tie", None) and kwargs.pop("tie")
        super().__init__(*args, **kwargs)

    def forward(self, ids):
        return super().forward(ids) * self.scale


class TagTagger(nn.Module):
    def __init__(self, vocab, dim, tags):
        super().__init__()
        self.embed = ScaledEmbedding(vocab, dim, padding_idx=0, scale=dim**0.5)
        self.out = nn.Linear(dim, tags)

    def forward(self, ids):
        return self.out(self.embed(ids))


case(
    "layer_subclass_keyword_popped",
    lambda: TagTagger(30, 8, 4),
    args(lambda: tokens(2, 6, vocab=30)),
    edit=("out", {"bias": False}),
    styles="a torch layer's subclass popping a keyword with a default before its parent's init",
)
