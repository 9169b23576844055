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

# --- A patch transformer whose defaults are a large model: every try at them is cut for size ---


class PatchBlock(nn.Module):
    def __init__(self, dim, heads, hidden_mult=4, norm_layer=nn.LayerNorm):
        super().__init__()
        assert dim % heads == 0, "dim must be divisible by heads"
        self.norm1, self.norm2 = norm_layer(dim), norm_layer(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(dim, dim * hidden_mult), nn.GELU(), nn.Linear(dim * hidden_mult, dim)
        )

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class SpectrogramMaskedAE(nn.Module):
    """A masked spectrogram autoencoder: its defaults are the paper's large model (ViT-L)."""

    def __init__(
        self,
        n_mels=128,
        n_frames=1024,
        patch=16,
        dim=1024,
        depth=24,
        heads=16,
        dec_dim=512,
        dec_depth=8,
        dec_heads=16,
        norm_layer=nn.LayerNorm,
    ):
        super().__init__()
        n_patches = (n_mels // patch) * (n_frames // patch)
        self.embed = nn.Conv2d(1, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, n_patches, dim))
        self.blocks = nn.ModuleList(
            [PatchBlock(dim, heads, norm_layer=norm_layer) for _ in range(depth)]
        )
        self.norm = norm_layer(dim)
        self.to_dec = nn.Linear(dim, dec_dim)
        self.dec_pos = nn.Parameter(torch.zeros(1, n_patches, dec_dim))
        self.dec_blocks = nn.ModuleList(
            [PatchBlock(dec_dim, dec_heads, norm_layer=norm_layer) for _ in range(dec_depth)]
        )
        self.dec_norm = norm_layer(dec_dim)
        self.pred = nn.Linear(dec_dim, patch * patch)

    def forward(self, spec):
        x = self.embed(spec.unsqueeze(1)).flatten(2).transpose(1, 2) + self.pos
        for blk in self.blocks:
            x = blk(x)
        x = self.to_dec(self.norm(x)) + self.dec_pos
        for blk in self.dec_blocks:
            x = blk(x)
        return self.pred(self.dec_norm(x))


case(
    "spectrogram_mae_large_defaults",
    lambda: SpectrogramMaskedAE(
        n_mels=16,
        n_frames=32,
        patch=8,
        dim=32,
        depth=2,
        heads=4,
        dec_dim=16,
        dec_depth=1,
        dec_heads=2,
    ),
    args(lambda: randn(2, 16, 32)),
    edit=("blocks.1", {"hidden_mult": 2}),
    styles="defaults of a large model (ViT-L: stacks of depth 24 and 8) and sizes divided by a patch",
)

# --- Widths and head counts at a base model's defaults: each alone fails a divisibility check ---


class FramePatchClassifier(nn.Module):
    """A ViT-B's defaults (768 wide, 12 heads) built small; the block asserts the split."""

    def __init__(self, n_mels=128, patch=16, dim=768, depth=12, heads=12, n_classes=527):
        super().__init__()
        self.embed = nn.Conv2d(1, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, n_mels // patch, dim))
        self.blocks = nn.ModuleList([PatchBlock(dim, heads) for _ in range(depth)])
        self.head = nn.Linear(dim, n_classes)

    def forward(self, spec):
        x = self.embed(spec.unsqueeze(1)).flatten(2).transpose(1, 2) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return self.head(x.mean(1))


case(
    "frame_patch_classifier_base_defaults",
    lambda: FramePatchClassifier(n_mels=16, patch=8, dim=32, depth=2, heads=4, n_classes=6),
    args(lambda: randn(2, 16, 8)),
    edit=("head", {"bias": False}),
    styles="a ViT-B's defaults (768 wide, 12 heads) built small: its block asserts dim % heads",
)


class AxialBlock(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        if channels % groups:
            raise ValueError(f"channels ({channels}) must be a multiple of groups ({groups})")
        self.norm = nn.GroupNorm(groups, channels)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=groups)

    def forward(self, x):
        return x + self.conv(self.norm(x))


class GroupedDenoiser(nn.Module):
    def __init__(self, in_ch=3, width=256, n_blocks=8, groups=32):
        super().__init__()
        self.stem = nn.Conv2d(in_ch, width, 3, padding=1)
        self.blocks = nn.Sequential(*[AxialBlock(width, groups) for _ in range(n_blocks)])
        self.out = nn.Conv2d(width, in_ch, 3, padding=1)

    def forward(self, x):
        return self.out(self.blocks(self.stem(x)))


case(
    "grouped_denoiser_multiple_of",
    lambda: GroupedDenoiser(in_ch=1, width=12, n_blocks=2, groups=3),
    args(lambda: randn(2, 1, 8, 8)),
    edit=("blocks.0", {"groups": 4}),
    styles="a width that must be a multiple of a group count at a large model's defaults",
)
