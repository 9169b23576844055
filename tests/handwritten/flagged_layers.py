"""Layers made only in one branch of a flag, and handed widths no other layer shows: a SIREN-like
net whose last layer is a plain ``nn.Linear`` only when asked, a classifier whose head exists only
with ``with_head``, a conv stack whose 1x1 projection width is read only in its branch, and a
stage list whose first stage is made by another call than the ``**stage_kwargs`` one
(``if i == 0``). Flipping the flag alone builds the wrong width, and the width alone the wrong
class: the search must move them together (``_forms/candidates/rules/branch_layer.py``)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .case import args, case, randn

# --- A sine-activated MLP whose last layer is linear only when asked ---------------------------


class SinLayer(nn.Module):
    def __init__(self, n_in, n_out, bias=True, first=False, w0=30):
        super().__init__()
        self.w0, self.first, self.n_in = w0, first, n_in
        self.lin = nn.Linear(n_in, n_out, bias=bias)
        bound = 1 / n_in if first else math.sqrt(6 / n_in) / w0
        nn.init.uniform_(self.lin.weight, -bound, bound)

    def forward(self, x):
        return torch.sin(self.w0 * self.lin(x))


class SineField(nn.Module):
    def __init__(self, n_in, width, depth, n_out, linear_last=False, w0_first=30, w0=30.0):
        super().__init__()
        blocks = [SinLayer(n_in, width, first=True, w0=w0_first)]
        for _ in range(depth):
            blocks.append(SinLayer(width, width, w0=w0))
        if linear_last:
            last = nn.Linear(width, n_out)
            nn.init.uniform_(last.weight, -math.sqrt(6 / width) / w0, math.sqrt(6 / width) / w0)
            blocks.append(last)
        else:
            blocks.append(SinLayer(width, n_out, w0=w0))
        self.layers = nn.Sequential(*blocks)

    def forward(self, x):
        return self.layers(x)


case(
    "sine_field_linear_last",
    lambda: SineField(2, 16, 1, 4, linear_last=True),
    args(lambda: randn(5, 2)),
    edit=("layers.0.lin", {"bias": False}),
    styles="the last layer's class picked by `if flag:`, its width read nowhere else",
)


class SineStack(nn.Module):
    """The same habit written with a conditional expression and the flag's other truth."""

    def __init__(self, n_in, width, n_out, depth=2, sine_out=True):
        super().__init__()
        self.first = SinLayer(n_in, width, first=True)
        self.hidden = nn.ModuleList([SinLayer(width, width) for _ in range(depth)])
        self.out = SinLayer(width, n_out) if sine_out else nn.Linear(width, n_out)

    def forward(self, x):
        x = self.first(x)
        for h in self.hidden:
            x = h(x)
        return self.out(x)


case(
    "sine_stack_linear_out",
    lambda: SineStack(1, 24, 2, depth=4, sine_out=False),
    args(lambda: randn(5, 1)),
    edit=("first.lin", {"bias": False}),
    styles="`A(...) if flag else B(...)`, the live layer made where the flag is False",
)

# --- A classifier whose head exists only with a flag ---------------------------------------------


class PatchClassifier(nn.Module):
    def __init__(self, channels=3, dim=16, n_classes=10, with_head=False):
        super().__init__()
        self.stem = nn.Conv2d(channels, dim, 4, stride=4)
        self.norm = nn.LayerNorm(dim)
        if with_head:
            self.head = nn.Linear(dim, n_classes)
        else:
            self.head = nn.Identity()

    def forward(self, x):
        h = self.norm(self.stem(x).flatten(2).mean(-1))
        return self.head(h)


case(
    "patch_classifier_with_head",
    lambda: PatchClassifier(3, 16, n_classes=7, with_head=True),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("stem", {"bias": False}),
    styles="a head made under `if with_head:`, its class count read only there",
)

# --- A conv stack with a projection made only with a flag -----------------------------------------


class ProjectedStack(nn.Module):
    def __init__(self, c_in, width, out_dim, blocks=2, skip_proj=True):
        super().__init__()
        convs = [nn.Conv2d(c_in, width, 3, padding=1)]
        convs += [nn.Conv2d(width, width, 3, padding=1) for _ in range(blocks - 1)]
        self.convs = nn.ModuleList(convs)
        self.proj = nn.Conv2d(width, out_dim, 1) if not skip_proj else None

    def forward(self, x):
        for c in self.convs:
            x = torch.relu(c(x))
        return self.proj(x) if self.proj is not None else x


case(
    "projected_stack_not_skipped",
    lambda: ProjectedStack(2, 8, 5, blocks=3, skip_proj=False),
    args(lambda: randn(1, 2, 6, 6)),
    edit=("convs.0", {"bias": False}),
    styles="`X(...) if not flag else None`, its width read only in that branch",
)

# --- Stages whose first is made by another call than the one spreading **stage_kwargs -----------


class DownStage(nn.Module):
    def __init__(self, c_in, c_out, downsample=True, kernel=2):
        super().__init__()
        self.down = nn.AvgPool2d(kernel) if downsample else None
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)

    def forward(self, x):
        if self.down is not None:
            x = self.down(x)
        return torch.relu(self.conv(x))


class StagedEncoder(nn.Module):
    def __init__(self, c_in, widths=(8, 16), **stage_kwargs):
        super().__init__()
        stages = []
        for i, w in enumerate(widths):
            if i == 0:
                stages.append(DownStage(c_in, w, downsample=False))
            else:
                stages.append(DownStage(widths[i - 1], w, **stage_kwargs))
        self.stages = nn.ModuleList(stages)

    def forward(self, x):
        for s in self.stages:
            x = s(x)
        return x


case(
    "staged_encoder_first_stage_apart",
    lambda: StagedEncoder(1, (4, 8, 12)),
    args(lambda: randn(1, 1, 8, 8)),
    edit=("stages.1.conv", {"bias": False}),
    styles="the first stage made by its own call (`if i == 0`), the rest with **stage_kwargs",
)

# --- An optional embedding made from a dict of keywords, only where one is given -----------------


class RandomFeatures(nn.Module):
    def __init__(self, d_in, n_feats=8, scale=1.0, learn=False):
        super().__init__()
        freqs = torch.randn(d_in, n_feats) * scale
        if learn:
            self.freqs = nn.Parameter(freqs)
        else:
            self.register_buffer("freqs", freqs)
        self.d_out = 2 * n_feats

    def forward(self, x):
        p = x @ self.freqs
        return torch.cat([p.sin(), p.cos()], -1)


class FeatureMLP(nn.Module):
    def __init__(self, sizes, features=None):
        super().__init__()
        self.embed = RandomFeatures(sizes[0], **features) if features is not None else None
        widths = [self.embed.d_out if self.embed is not None else sizes[0], *sizes[1:]]
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        for i, lin in enumerate(self.mlp):
            x = lin(x) if i == len(self.mlp) - 1 else torch.tanh(lin(x))
        return x


case(
    "feature_mlp_keywords_given",
    lambda: FeatureMLP([3, 16, 16, 2], features={"scale": 3.0}),
    args(lambda: randn(4, 3)),
    edit=("mlp.0", {"bias": False}),
    styles="`Layer(d, **kw) if kw is not None else None`, widths one more than the layers",
)
