"""Hyperparameters handed as one plain dict read by string keys, and a namespace field read by
its index: a classifier made from ``cfg["..."]`` and ``cfg.get("...", default)`` (its block
looked up in a table by a key), a VAE whose nested dicts are read through a name and spread
into a layer with ``**``, a key tested with ``in`` first, and a super-resolution net whose
``args.scale[0]`` picks the upsampler."""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn as nn

from .case import args, case, randn

# --- A classifier from a dict of hyperparameters -----------------------------------------------


class Plain(nn.Sequential):
    def __init__(self, c_in, c_out):
        super().__init__(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU())


class Gated(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)
        self.gate = nn.Conv2d(c_in, c_out, 1)

    def forward(self, x):
        return self.conv(x) * torch.sigmoid(self.gate(x))


UNITS = {"plain": Plain, "gated": Gated}


class DictNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        unit = UNITS[cfg.get("unit", "plain")]
        self.stem = nn.Conv2d(cfg["in_ch"], cfg["width"], 3, padding=1)
        self.body = nn.Sequential(*[unit(cfg["width"], cfg["width"]) for _ in range(cfg["depth"])])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(cfg["width"], cfg["num_classes"])

    def forward(self, x):
        return self.head(self.pool(self.body(self.stem(x))).flatten(1))


case(
    "dict_hparams_net",
    lambda: DictNet({"in_ch": 3, "width": 12, "depth": 2, "unit": "gated", "num_classes": 5}),
    args(lambda: randn(2, 3, 8, 8)),
    edit=("head", {"bias": False}),
    styles="a dict of hyperparameters read by string keys, a block chosen by a key's table",
)

# --- A VAE from nested dicts: a name bound to a sub-dict, another spread into a layer ----------


class GaussianEncoder(nn.Module):
    def __init__(self, in_dim, hidden, latent, layers=1):
        super().__init__()
        self.rnn = nn.GRU(in_dim, hidden, layers, batch_first=True)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.mu(h[-1]), self.logvar(h[-1])


class DictVAE(nn.Module):
    def __init__(self, hp):
        super().__init__()
        self.encoder = GaussianEncoder(hp["features"], **hp["enc"])
        dec = hp["dec"]
        self.expand = nn.Linear(hp["enc"]["latent"], dec["hidden"])
        self.out = nn.Linear(dec["hidden"], hp["features"])
        if "dropout" in hp:
            self.drop = nn.Dropout(hp["dropout"])

    def forward(self, x):
        mu, logvar = self.encoder(x)
        h = torch.tanh(self.expand(mu))
        if hasattr(self, "drop"):
            h = self.drop(h)
        return self.out(h), logvar


case(
    "dict_nested_vae",
    lambda: DictVAE({"features": 6, "enc": {"hidden": 16, "latent": 4}, "dec": {"hidden": 10}}),
    args(lambda: randn(2, 5, 6)),
    edit=("out", {"bias": False}),
    styles="nested dicts read by keys, a sub-dict bound to a name, a sub-dict spread with **",
)

case(
    "dict_tested_key",
    lambda: DictVAE(
        {
            "features": 4,
            "enc": {"hidden": 8, "latent": 3, "layers": 2},
            "dec": {"hidden": 6},
            "dropout": 0.25,
        }  # fmt: skip
    ),
    args(lambda: randn(2, 5, 4)),
    edit=("out", {"bias": False}),
    styles="a key tested with in before it is read",
)

# --- A key read only when the dict is wrong ---------------------------------------------------


class Tagger(nn.Module):
    def __init__(self, hp):
        super().__init__()
        if hp["heads"] < 1:
            raise ValueError(f"heads must be positive for {hp['name']}")
        self.embed = nn.Embedding(hp["vocab"], hp["dim"])
        self.attn = nn.MultiheadAttention(hp["dim"], hp["heads"], batch_first=True)
        self.tag = nn.Linear(hp["dim"], hp.get("tags", 9))

    def forward(self, ids):
        h = self.embed(ids)
        return self.tag(self.attn(h, h, h, need_weights=False)[0])


case(
    "dict_key_in_raise",
    lambda: Tagger({"vocab": 30, "dim": 16, "heads": 4, "tags": 7, "name": "pos"}),
    args(lambda: torch.randint(0, 30, (2, 5))),
    edit=("tag", {"bias": False}),
    styles="a key read only in a raise, a key read with get and a default",
)

# --- Super-resolution from an options namespace: a field read by its index --------------------


class PixelUp(nn.Sequential):
    def __init__(self, scale, feats):
        layers = []
        if scale & (scale - 1):
            raise NotImplementedError(f"scale {scale} is not a power of 2")
        for _ in range(scale.bit_length() - 1):
            layers += [nn.Conv2d(feats, 4 * feats, 3, padding=1), nn.PixelShuffle(2)]
        super().__init__(*layers)


class TinySR(nn.Module):
    def __init__(self, opt):
        super().__init__()
        scale = opt.scale[0]
        self.head = nn.Conv2d(opt.colors, opt.feats, 3, padding=1)
        self.body = nn.Sequential(*[nn.Conv2d(opt.feats, opt.feats, 3, padding=1)
                                    for _ in range(opt.blocks)])  # fmt: skip
        self.up = PixelUp(scale, opt.feats)
        self.tail = nn.Conv2d(opt.feats, opt.colors, 3, padding=1)

    def forward(self, x):
        h = self.head(x)
        return self.tail(self.up(self.body(h) + h))


case(
    "sr_indexed_option",
    lambda: TinySR(SimpleNamespace(scale=[2], colors=3, feats=8, blocks=2)),
    args(lambda: randn(1, 3, 6, 6)),
    edit=("tail", {"bias": False}),
    styles="an options namespace whose field is read by its index",
)

# --- Blocks handed the function that makes their convs ----------------------------------------


def same_pad_conv(c_in, c_out, k, bias=True):
    return nn.Conv2d(c_in, c_out, k, padding=k // 2, bias=bias)


class ConvRes(nn.Module):
    def __init__(self, conv, feats, k, res_scale=1.0):
        super().__init__()
        self.body = nn.Sequential(conv(feats, feats, k), nn.ReLU(True), conv(feats, feats, k))
        self.res_scale = res_scale

    def forward(self, x):
        return x + self.res_scale * self.body(x)


class FactoryNet(nn.Module):
    def __init__(self, feats=8, n_blocks=2, k=3, conv_fn=same_pad_conv):
        super().__init__()
        self.head = conv_fn(3, feats, k)
        self.blocks = nn.Sequential(*[ConvRes(conv_fn, feats, k, 0.5) for _ in range(n_blocks)])
        self.tail = conv_fn(feats, 3, k)

    def forward(self, x):
        return self.tail(self.blocks(self.head(x)))


case(
    "conv_factory_blocks",
    lambda: FactoryNet(feats=6, n_blocks=3, k=5),
    args(lambda: randn(1, 3, 8, 8)),
    edit=("tail", {"bias": False}),
    styles="blocks handed the function that makes their convs",
)
