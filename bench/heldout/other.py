"""Held-out models of other habits: GIN on an edge_index with scatter sums, a mixture density
network, a Gumbel-softmax VAE, BYOL's online/target pair, blocks built from string specs through
a registry."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --- GIN: edge_index message passing with index_add_, jumping knowledge, a global add pool -------


class GINConv(nn.Module):
    def __init__(self, nn_: nn.Module, eps: float = 0.0, train_eps: bool = False) -> None:
        super().__init__()
        self.nn = nn_
        if train_eps:
            self.eps = nn.Parameter(torch.tensor([eps]))
        else:
            self.register_buffer("eps", torch.tensor([eps]))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        src, dst = edge_index
        agg = torch.zeros_like(x).index_add_(0, dst, x[src])
        return self.nn((1 + self.eps) * x + agg)


def mlp(channels: list[int], norm: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(1, len(channels)):
        layers.append(nn.Linear(channels[i - 1], channels[i]))
        if i < len(channels) - 1:
            if norm:
                layers.append(nn.BatchNorm1d(channels[i]))
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class GIN(nn.Module):
    def __init__(
        self,
        in_channels: int,
        hidden_channels: int,
        out_channels: int,
        num_layers: int,
        train_eps: bool = True,
    ) -> None:
        super().__init__()
        self.convs = nn.ModuleList()
        for i in range(num_layers):
            self.convs.append(
                GINConv(
                    mlp(
                        [
                            in_channels if i == 0 else hidden_channels,
                            hidden_channels,
                            hidden_channels,
                        ]
                    ),
                    train_eps=train_eps,
                )
            )
        self.lin = nn.Linear(hidden_channels * num_layers, out_channels)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor) -> Tensor:
        xs = []
        for conv in self.convs:
            x = conv(x, edge_index).relu()
            xs.append(x)
        h = torch.cat(xs, -1)
        size = int(batch.max()) + 1
        pooled = h.new_zeros(size, h.size(-1)).index_add_(0, batch, h)
        return self.lin(pooled)


def _graphs() -> tuple[tuple[Any, ...], dict[str, Any]]:
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 4, 5], [1, 0, 2, 1, 4, 3, 5, 4]])
    return (rand(6, 3), edge_index, torch.tensor([0, 0, 0, 1, 1, 1])), {}


@heldout("gin_edge_index", _graphs, edit=("lin", {"bias": False}))
def gin() -> nn.Module:
    return GIN(3, 8, 2, num_layers=3)


# --- Mixture density network: (pi, sigma, mu) ------------------------------------------------------


class MDN(nn.Module):
    def __init__(
        self, in_features: int, out_features: int, num_gaussians: int, hidden: int = 32
    ) -> None:
        super().__init__()
        self.in_features, self.out_features, self.num_gaussians = (
            in_features,
            out_features,
            num_gaussians,
        )
        self.backbone = nn.Sequential(nn.Linear(in_features, hidden), nn.Tanh())
        self.pi = nn.Sequential(nn.Linear(hidden, num_gaussians), nn.Softmax(dim=1))
        self.sigma = nn.Linear(hidden, out_features * num_gaussians)
        self.mu = nn.Linear(hidden, out_features * num_gaussians)

    def forward(self, minibatch: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = self.backbone(minibatch)
        sigma = torch.exp(self.sigma(h)).view(-1, self.num_gaussians, self.out_features)
        mu = self.mu(h).view(-1, self.num_gaussians, self.out_features)
        return self.pi(h), sigma, mu


@heldout("mdn", lambda: ((rand(7, 3),), {}), edit=("pi.1", {"dim": -1}))
def mdn() -> nn.Module:
    return MDN(3, 2, 5)


# --- Gumbel-softmax VAE: latent_dim * categorical_dim, a temperature buffer ----------------------


class GumbelVAE(nn.Module):
    def __init__(
        self,
        input_dim: int = 784,
        latent_dim: int = 30,
        categorical_dim: int = 10,
        temp: float = 1.0,
        hard: bool = False,
    ) -> None:
        super().__init__()
        self.latent_dim, self.categorical_dim, self.hard = latent_dim, categorical_dim, hard
        self.register_buffer("temp", torch.tensor(temp))
        self.enc = nn.Sequential(
            nn.Linear(input_dim, 64), nn.ReLU(), nn.Linear(64, latent_dim * categorical_dim)
        )
        self.dec = nn.Sequential(
            nn.Linear(latent_dim * categorical_dim, 64),
            nn.ReLU(),
            nn.Linear(64, input_dim),
            nn.Sigmoid(),
        )

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        q = self.enc(x.view(x.size(0), -1))
        q_y = q.view(q.size(0), self.latent_dim, self.categorical_dim)
        z = F.gumbel_softmax(q_y, tau=float(self.temp), hard=self.hard)
        return self.dec(z.view(x.size(0), -1)), F.softmax(q_y, dim=-1).reshape(*q.size())


@heldout("gumbel_vae", lambda: ((rand(4, 1, 6, 6),), {}), edit=("dec.1", {"inplace": True}))
def gumbel_vae() -> nn.Module:
    return GumbelVAE(36, latent_dim=4, categorical_dim=5, temp=0.5)


# --- BYOL: an online network, a target made by deepcopy with grads off, a predictor --------------


class MLPHead(nn.Module):
    def __init__(self, in_channels: int, mlp_hidden_size: int, projection_size: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_channels, mlp_hidden_size),
            nn.BatchNorm1d(mlp_hidden_size),
            nn.ReLU(inplace=True),
            nn.Linear(mlp_hidden_size, projection_size),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class BYOL(nn.Module):
    def __init__(
        self, backbone: nn.Module, feat_dim: int, hidden: int = 64, proj: int = 16, m: float = 0.996
    ) -> None:
        super().__init__()
        self.m = m
        self.online = nn.Sequential(backbone, MLPHead(feat_dim, hidden, proj))
        self.predictor = MLPHead(proj, hidden, proj)
        self.target = copy.deepcopy(self.online)
        for p in self.target.parameters():
            p.requires_grad = False

    @torch.no_grad()
    def update_target(self) -> None:
        for po, pt in zip(self.online.parameters(), self.target.parameters()):
            pt.data = pt.data * self.m + po.data * (1.0 - self.m)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        p1, p2 = self.predictor(self.online(x1)), self.predictor(self.online(x2))
        with torch.no_grad():
            t1, t2 = self.target(x1), self.target(x2)

        def loss(p: Tensor, z: Tensor) -> Tensor:
            return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1)

        return (loss(p1, t2) + loss(p2, t1)).mean()


@heldout(
    "byol_pair",
    lambda: ((rand(4, 3, 8, 8), rand(4, 3, 8, 8, seed=1)), {}),
    edit=("predictor.net.1", {"momentum": 0.2}),
)
def byol() -> nn.Module:
    backbone = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )
    return BYOL(backbone, 8, hidden=16, proj=8)


# --- Blocks from string specs through a registry ---------------------------------------------------

BLOCKS: dict[str, type[nn.Module]] = {}


def register(name: str) -> Callable[[type[nn.Module]], type[nn.Module]]:
    def deco(cls: type[nn.Module]) -> type[nn.Module]:
        BLOCKS[name] = cls
        return cls

    return deco


@register("conv")
class ConvBNAct(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        self.act = nn.Hardswish()

    def forward(self, x: Tensor) -> Tensor:
        return self.act(self.bn(self.conv(x)))


@register("mbconv")
class MBConv(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1, expand: int = 4) -> None:
        super().__init__()
        mid = c_in * expand
        self.use_res = stride == 1 and c_in == c_out
        self.block = nn.Sequential(
            nn.Conv2d(c_in, mid, 1, bias=False),
            nn.BatchNorm2d(mid),
            nn.SiLU(),
            nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.SiLU(),
            nn.Conv2d(mid, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )

    def forward(self, x: Tensor) -> Tensor:
        y = self.block(x)
        return x + y if self.use_res else y


class SpecNet(nn.Module):
    def __init__(self, spec: str, num_classes: int = 10, in_ch: int = 3) -> None:
        super().__init__()
        layers, c = [], in_ch
        for item in spec.split(","):
            kind, c_out, stride = item.strip().split(":")
            layers.append(BLOCKS[kind](c, int(c_out), stride=int(stride)))
            c = int(c_out)
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, num_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x).mean((2, 3)))


@heldout(
    "registry_spec_string", lambda: ((rand(2, 3, 16, 16),), {}), edit=("body.0.bn", {"eps": 1e-3})
)
def specnet() -> nn.Module:
    return SpecNet("conv:8:2, mbconv:8:1, mbconv:12:2, conv:16:1", num_classes=4)
