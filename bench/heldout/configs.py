"""Held-out models configured in other ways: nested namespaces (as OmegaConf gives) with hparams
kept, a Keras-like list of layer dicts with lazy layers, Deep Sets with a pooling choice and a
mask, fast.ai-style Lambda layers."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import torch
from torch import Tensor, nn

from .spec import heldout, rand

# --- A model read from nested namespaces (as OmegaConf gives), hparams kept -----------------------


class Encoder1D(nn.Module):
    def __init__(self, cfg: Any) -> None:
        super().__init__()
        chans = [cfg.in_channels, *cfg.channels]
        self.blocks = nn.Sequential(
            *[
                nn.Sequential(
                    nn.Conv1d(a, b, cfg.kernel, padding=cfg.kernel // 2),
                    nn.GroupNorm(cfg.groups, b),
                    nn.GELU(),
                )
                for a, b in zip(chans[:-1], chans[1:])
            ]
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.blocks(x)


class Classifier1D(nn.Module):
    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.hparams = {"model": vars(cfg.model.encoder), "n_classes": cfg.data.n_classes}
        self.encoder = Encoder1D(cfg.model.encoder)
        self.dropout = nn.Dropout(cfg.model.dropout)
        self.head = nn.Linear(cfg.model.encoder.channels[-1], cfg.data.n_classes)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.dropout(self.encoder(x).amax(-1)))


@heldout("namespace_cfg", lambda: ((rand(2, 2, 30),), {}), edit=("dropout", {"p": 0.2}))
def namespace_cfg() -> nn.Module:
    cfg = SimpleNamespace(
        model=SimpleNamespace(
            dropout=0.1,
            encoder=SimpleNamespace(in_channels=2, channels=[8, 16], kernel=5, groups=4),
        ),
        data=SimpleNamespace(n_classes=3),
    )
    return Classifier1D(cfg)


# --- Keras-like: a list of layer dicts, input features found by lazy layers ----------------------


class KerasLike(nn.Module):
    def __init__(self, layers: list[dict[str, Any]]) -> None:
        super().__init__()
        acts = {
            "relu": nn.ReLU,
            "tanh": nn.Tanh,
            "softmax": lambda: nn.Softmax(-1),
            None: nn.Identity,
        }
        self.seq = nn.Sequential()
        for i, spec in enumerate(layers):
            if spec["type"] == "dense":
                self.seq.add_module(f"dense_{i}", nn.LazyLinear(spec["units"]))
                self.seq.add_module(f"act_{i}", acts[spec.get("activation")]())
            elif spec["type"] == "dropout":
                self.seq.add_module(f"dropout_{i}", nn.Dropout(spec["rate"]))
            elif spec["type"] == "flatten":
                self.seq.add_module(f"flatten_{i}", nn.Flatten())
            else:
                raise ValueError(f"unknown layer type {spec['type']!r}")

    def forward(self, x: Tensor) -> Tensor:
        return self.seq(x)


@heldout("keras_lazy", lambda: ((rand(3, 2, 5),), {}), edit=("seq.dropout_2", {"p": 0.3}))
def keras_like() -> nn.Module:
    return KerasLike(
        [
            {"type": "flatten"},
            {"type": "dense", "units": 16, "activation": "relu"},
            {"type": "dropout", "rate": 0.2},
            {"type": "dense", "units": 4, "activation": "softmax"},
        ]
    )


# --- Deep Sets: phi, a pooling choice, rho; forward(x, mask) ---------------------------------------


class DeepSets(nn.Module):
    def __init__(
        self, in_dim: int, hidden: int, out_dim: int, pool: str = "sum", n_phi: int = 2
    ) -> None:
        super().__init__()
        if pool not in ("sum", "mean", "max"):
            raise ValueError(f"pool must be sum, mean or max, got {pool!r}")
        self.pool = pool
        phi: list[nn.Module] = []
        for i in range(n_phi):
            phi += [nn.Linear(in_dim if i == 0 else hidden, hidden), nn.ELU()]
        self.phi = nn.Sequential(*phi)
        self.rho = nn.Sequential(nn.Linear(hidden, hidden), nn.ELU(), nn.Linear(hidden, out_dim))

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        h = self.phi(x) * mask.unsqueeze(-1)
        if self.pool == "sum":
            z = h.sum(1)
        elif self.pool == "mean":
            z = h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)
        else:
            z = h.masked_fill(~mask.bool().unsqueeze(-1), float("-inf")).amax(1)
        return self.rho(z)


@heldout(
    "deep_sets_mask",
    lambda: ((rand(3, 7, 2), (torch.arange(7) < torch.tensor([[3], [7], [5]])).float()), {}),
    edit=("rho.1", {"alpha": 0.5}),
)
def deep_sets() -> nn.Module:
    return DeepSets(2, 16, 1, pool="mean", n_phi=3)


# --- fast.ai-style Lambda layers in a Sequential ---------------------------------------------------


class Lambda(nn.Module):
    def __init__(self, func: Callable[[Tensor], Tensor]) -> None:
        super().__init__()
        self.func = func

    def forward(self, x: Tensor) -> Tensor:
        return self.func(x)


def conv_bn(ni: int, nf: int, stride: int = 2) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(ni, nf, 3, stride, 1, bias=False), nn.BatchNorm2d(nf), nn.ReLU())


@heldout("fastai_lambda", lambda: ((rand(2, 784),), {}), edit=("1.1", {"momentum": 0.3}))
def fastai_lambda() -> nn.Module:
    return nn.Sequential(
        Lambda(lambda x: x.view(-1, 1, 28, 28)),
        conv_bn(1, 8),
        conv_bn(8, 16),
        conv_bn(16, 10),
        nn.AdaptiveAvgPool2d(1),
        Lambda(lambda x: x.view(x.size(0), -1)),
    )
