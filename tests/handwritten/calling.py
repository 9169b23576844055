"""Awkward calling conventions and state: FiLM taking a dict and returning a namedtuple, a forward
taking a dataclass and keyword-only options, a norm counting its calls in a buffer, a siamese net
sharing one encoder (its head set to None), an Inception block keyed by strings, a model from a
nested dict config with string choices, random Fourier features whose constructor calls .item()."""

from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- FiLM: forward takes a dict batch, returns a namedtuple -------------------------------------

FiLMOutput = namedtuple("FiLMOutput", ["logits", "features"])


class FiLMBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels, affine=False)

    def forward(self, x, gamma, beta):
        out = self.bn(self.conv(x))
        out = gamma[:, :, None, None] * out + beta[:, :, None, None]
        return F.relu(out) + x


class FiLMedNet(nn.Module):
    def __init__(self, vocab, q_dim=16, channels=16, n_blocks=2, n_answers=5):
        super().__init__()
        self.n_blocks, self.channels = n_blocks, channels
        self.embed = nn.Embedding(vocab, q_dim)
        self.q_rnn = nn.GRU(q_dim, q_dim, batch_first=True)
        self.film_gen = nn.Linear(q_dim, 2 * channels * n_blocks)
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.blocks = nn.ModuleList(FiLMBlock(channels) for _ in range(n_blocks))
        self.classifier = nn.Sequential(
            nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(channels, n_answers)
        )

    def forward(self, batch):
        _, q = self.q_rnn(self.embed(batch["question"]))
        film = self.film_gen(q[-1]).view(-1, self.n_blocks, 2, self.channels)
        x = F.relu(self.stem(batch["image"]))
        for i, block in enumerate(self.blocks):
            x = block(x, film[:, i, 0], film[:, i, 1])
        return FiLMOutput(self.classifier(x), x)


case(
    "film_dict_namedtuple",
    lambda: FiLMedNet(30),
    lambda: (({"image": randn(2, 3, 8, 8), "question": torch.randint(0, 30, (2, 5))},), {}),
    edit=("blocks.0.bn", {"eps": 1e-4}),
    styles="forward(batch) with a dict, a namedtuple out, a generator given to ModuleList, 2 * channels * n_blocks",
)

# --- A dataclass batch in, a dict out; keyword-only forward options ------------------------------


@dataclass
class Batch:
    x: torch.Tensor
    mask: Optional[torch.Tensor] = None


class MaskedPooler(nn.Module):
    def __init__(self, d_in, d_model, n_out, act="gelu"):
        super().__init__()
        acts = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}
        self.proj = nn.Linear(d_in, d_model)
        self.act = acts[act]()
        self.head = nn.Linear(d_model, n_out)

    def forward(self, batch: Batch, *, return_hidden=False, temperature=1.0, **unused):
        h = self.act(self.proj(batch.x))
        if batch.mask is not None:
            m = batch.mask.unsqueeze(-1).float()
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1)
        else:
            pooled = h.mean(1)
        out = {"logits": self.head(pooled) / temperature}
        if return_hidden:
            out["hidden"] = h
        return out


case(
    "dataclass_batch_kwargs",
    lambda: MaskedPooler(6, 16, 3, act="silu"),
    lambda: (
        (Batch(randn(2, 5, 6), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()),),
        {"return_hidden": True, "temperature": 2.0},
    ),
    edit=("head", {"bias": False}),
    styles="forward(batch: dataclass, *, keyword options, **unused), a dict out, a string looked up in a dict",
)

# --- A norm with running statistics and a step counter updated in every forward -------------------


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.01, eps=1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.steps += 1
        if self.training:
            mean, var = x.mean(0), x.var(0, unbiased=False)
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var, self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return (x - mean) / torch.sqrt(var + self.eps)


class ObsNormPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=(32, 32)):
        super().__init__()
        self.obs_norm = RunningNorm(obs_dim)
        layers, prev = [], obs_dim
        for h in hidden:
            layers += [nn.Linear(prev, h), nn.Tanh()]
            prev = h
        self.pi = nn.Sequential(*layers, nn.Linear(prev, act_dim))
        self.log_std = nn.Parameter(-0.5 * torch.ones(act_dim))

    def forward(self, obs):
        mu = self.pi(self.obs_norm(obs))
        return mu, self.log_std.exp().expand_as(mu)


case(
    "running_norm_policy",
    lambda: ObsNormPolicy(5, 2),
    args(lambda: randn(4, 5)),
    edit=("obs_norm", {"momentum": 0.05}),
    styles="buffers updated in forward (a step counter even in eval, running stats in train), (mu, std) out",
    train=True,
)

# --- Siamese net: one encoder called twice; its head removed by setting it to None ---------------


class SmallEncoder(nn.Module):
    def __init__(self, in_ch=1, width=8, emb=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_ch, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, width * 2, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.fc = nn.Linear(width * 2, emb)

    def forward(self, x):
        x = self.features(x).flatten(1)
        return self.fc(x) if self.fc is not None else x


class SiameseNet(nn.Module):
    def __init__(self, in_ch=1, width=8, emb=16, use_head=False):
        super().__init__()
        self.encoder = SmallEncoder(in_ch, width, emb)
        if not use_head:
            self.encoder.fc = None
        self.projector = nn.Linear(emb if use_head else width * 2, emb)

    def forward(self, x1, x2):
        z1 = self.projector(self.encoder(x1))
        z2 = self.projector(self.encoder(x2))
        return F.pairwise_distance(z1, z2), (z1, z2)


case(
    "siamese_shared",
    lambda: SiameseNet(use_head=False),
    args(lambda: randn(2, 1, 12, 12), lambda: randn(2, 1, 12, 12, seed=1)),
    edit=("projector", {"bias": False}),
    styles="one encoder called twice, a child set to None after building, forward(x1, x2) -> (d, (z1, z2))",
)

# --- Inception block: ModuleDict with string keys, branches concatenated -------------------------


class BasicConv2d(nn.Module):
    def __init__(self, in_channels, out_channels, **kwargs):
        super(BasicConv2d, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class InceptionBlock(nn.Module):
    def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj):
        super(InceptionBlock, self).__init__()
        self.branches = nn.ModuleDict(
            {
                "1x1": BasicConv2d(in_channels, ch1x1, kernel_size=1),
                "3x3": nn.Sequential(
                    BasicConv2d(in_channels, ch3x3red, kernel_size=1),
                    BasicConv2d(ch3x3red, ch3x3, kernel_size=3, padding=1),
                ),
                "5x5": nn.Sequential(
                    BasicConv2d(in_channels, ch5x5red, kernel_size=1),
                    BasicConv2d(ch5x5red, ch5x5, kernel_size=5, padding=2),
                ),
                "pool": nn.Sequential(
                    nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                    BasicConv2d(in_channels, pool_proj, kernel_size=1),
                ),
            }
        )

    def forward(self, x):
        return torch.cat([self.branches[k](x) for k in self.branches], 1)


class MiniGoogLeNet(nn.Module):
    def __init__(self, cfg=((8, 4, 8, 2, 4, 4), (8, 4, 8, 2, 4, 4)), num_classes=10):
        super().__init__()
        self.stem = BasicConv2d(3, 16, kernel_size=3, padding=1)
        blocks, c = [], 16
        for ch1, r3, c3, r5, c5, pp in cfg:
            blocks.append(InceptionBlock(c, ch1, r3, c3, r5, c5, pp))
            c = ch1 + c3 + c5 + pp
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


case(
    "inception_moduledict",
    lambda: MiniGoogLeNet(),
    args(lambda: randn(2, 3, 12, 12)),
    edit=("blocks.0.branches.pool.0", {"ceil_mode": False}),
    styles="ModuleDict with string keys ('1x1', 'pool'), **kwargs passed to Conv2d, a cfg of 6-tuples",
)

# --- A model from a nested dict config with string choices ---------------------------------------

ACTIVATIONS = {
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "tanh": nn.Tanh,
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
}


class MLPBlock(nn.Module):
    def __init__(self, d_in, d_out, act="relu", norm=None, dropout=0.0):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)
        self.norm = (
            {"batch": nn.BatchNorm1d, "layer": nn.LayerNorm}[norm](d_out) if norm else nn.Identity()
        )
        self.act = ACTIVATIONS[act]()
        self.drop = nn.Dropout(dropout) if dropout else nn.Identity()

    def forward(self, x):
        return self.drop(self.act(self.norm(self.lin(x))))


class ConfigAutoencoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        enc, dec = cfg["encoder"], cfg.get("decoder", {})
        dims = [cfg["input_dim"], *enc["dims"], cfg["latent_dim"]]
        self.encoder = nn.Sequential(
            *[
                MLPBlock(a, b, enc.get("act", "relu"), enc.get("norm"), enc.get("dropout", 0.0))
                for a, b in zip(dims[:-1], dims[1:])
            ]
        )
        rdims = (
            dims[::-1]
            if dec.get("mirror", True)
            else [cfg["latent_dim"], *dec["dims"], cfg["input_dim"]]
        )
        self.decoder = nn.Sequential(
            *[MLPBlock(a, b, dec.get("act", "relu")) for a, b in zip(rdims[:-2], rdims[1:-1])],
            nn.Linear(rdims[-2], rdims[-1]),
        )

    def forward(self, x):
        z = self.encoder(x)
        return self.decoder(z), z


case(
    "dict_config_autoencoder",
    lambda: ConfigAutoencoder(
        {
            "input_dim": 12,
            "latent_dim": 3,
            "encoder": {"dims": [16, 8], "act": "leaky_relu", "norm": "layer", "dropout": 0.1},
            "decoder": {"act": "tanh"},
        }
    ),
    args(lambda: randn(4, 12)),
    edit=("encoder.0.norm", {"eps": 1e-6}),
    styles="a nested dict config (cfg['encoder']['dims'], .get defaults), strings looked up in dicts",
)

# --- Random Fourier features: the constructor samples a matrix and calls .item() -----------------


class FourierFeatures(nn.Module):
    def __init__(self, in_features, mapping_size=64, scale=10.0, max_res=32):
        super().__init__()
        self.register_buffer("B", torch.randn(in_features, mapping_size) * scale)
        freqs = torch.linspace(1.0, max_res / 2, steps=mapping_size)
        self.max_freq = freqs[-1].item()
        self.mapping_size = mapping_size

    def forward(self, x):
        x_proj = (2.0 * math.pi * x) @ self.B / self.max_freq
        return torch.cat([torch.sin(x_proj), torch.cos(x_proj)], dim=-1)


class CoordMLP(nn.Module):
    def __init__(
        self, in_features=2, mapping_size=16, hidden=32, n_layers=3, out_features=3, scale=10.0
    ):
        super().__init__()
        self.ff = FourierFeatures(in_features, mapping_size, scale)
        layers, d = [], 2 * mapping_size
        for _ in range(n_layers):
            layers += [nn.Linear(d, hidden), nn.ReLU(inplace=True)]
            d = hidden
        layers += [nn.Linear(d, out_features), nn.Sigmoid()]
        self.net = nn.Sequential(*layers)

    def forward(self, coords):
        return self.net(self.ff(coords))


case(
    "fourier_features_item",
    lambda: CoordMLP(),
    args(lambda: torch.rand(50, 2, generator=torch.Generator().manual_seed(0))),
    edit=("net.1", {"inplace": False}),
    styles="a random buffer made in the constructor, freqs[-1].item(), 2 * mapping_size widths",
)
