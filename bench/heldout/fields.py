"""Held-out fields, flows and raw parameters: SIREN, RealNVP couplings with checkerboard masks, a
deformable convolution, MAML-style parameters in a ParameterDict."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import Tensor, nn

from .spec import heldout, rand

# --- SIREN: sine layers, omega_0, init with numpy bounds; returns (output, coords) ---------------


class SineLayer(nn.Module):
    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        is_first: bool = False,
        omega_0: float = 30,
    ) -> None:
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        with torch.no_grad():
            bound = (
                1 / self.in_features
                if self.is_first
                else np.sqrt(6 / self.in_features) / self.omega_0
            )
            self.linear.weight.uniform_(-bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        hidden_layers: int,
        out_features: int,
        outermost_linear: bool = False,
        first_omega_0: float = 30,
        hidden_omega_0: float = 30.0,
    ) -> None:
        super().__init__()
        self.net = [SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)]
        for i in range(hidden_layers):
            self.net.append(
                SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0)
            )
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                bound = np.sqrt(6 / hidden_features) / hidden_omega_0
                final_linear.weight.uniform_(-bound, bound)
            self.net.append(final_linear)
        else:
            self.net.append(
                SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0)
            )
        self.net = nn.Sequential(*self.net)

    def forward(self, coords: Tensor) -> tuple[Tensor, Tensor]:
        coords = coords.clone().detach()
        return self.net(coords), coords


@heldout(
    "siren",
    lambda: ((torch.rand(40, 2, generator=torch.Generator().manual_seed(0)),), {}),
    edit=("net.3", {"bias": False}),
)
def siren() -> nn.Module:
    return Siren(2, 16, 2, 3, outermost_linear=True)


# --- RealNVP: checkerboard masks made with arange, ParameterList scales, (z, log_det) out ---------


class Coupling(nn.Module):
    def __init__(self, dim: int, hidden: int, mask: Tensor) -> None:
        super().__init__()
        self.register_buffer("mask", mask)
        self.s = nn.Sequential(
            nn.Linear(dim, hidden), nn.LeakyReLU(), nn.Linear(hidden, dim), nn.Tanh()
        )
        self.t = nn.Sequential(nn.Linear(dim, hidden), nn.LeakyReLU(), nn.Linear(hidden, dim))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        x_ = x * self.mask
        s = self.s(x_) * (1 - self.mask)
        t = self.t(x_) * (1 - self.mask)
        return x_ + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(dim=1)


class RealNVP(nn.Module):
    def __init__(self, dim: int, hidden: int, n_couplings: int) -> None:
        super().__init__()
        masks = [((torch.arange(dim) + i) % 2).float() for i in range(n_couplings)]
        self.couplings = nn.ModuleList([Coupling(dim, hidden, m) for m in masks])
        self.log_scales = nn.ParameterList(
            [nn.Parameter(torch.zeros(dim)) for _ in range(n_couplings)]
        )
        self.register_buffer("prior_loc", torch.zeros(dim))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        log_det = torch.zeros(x.shape[0], device=x.device)
        for c, ls in zip(self.couplings, self.log_scales):
            x, ld = c(x)
            x = x * ls.exp()
            log_det = log_det + ld + ls.sum()
        return x, log_det


@heldout(
    "realnvp_masks", lambda: ((rand(8, 6),), {}), edit=("couplings.1.s.1", {"negative_slope": 0.2})
)
def realnvp() -> nn.Module:
    return RealNVP(6, 16, 4)


# --- Deformable convolution (torchvision.ops) with a learned offset conv -------------------------


class DeformBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, k: int = 3, *, offset_groups: int = 1) -> None:
        super().__init__()
        self.offset = nn.Conv2d(in_ch, 2 * offset_groups * k * k, k, padding=k // 2)
        nn.init.zeros_(self.offset.weight)
        nn.init.zeros_(self.offset.bias)
        self.dcn = torchvision.ops.DeformConv2d(in_ch, out_ch, k, padding=k // 2)
        self.norm = nn.BatchNorm2d(out_ch)

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(self.norm(self.dcn(x, self.offset(x))))


@heldout(
    "deformable_conv", lambda: ((rand(1, 4, 10, 10),), {}), edit=("0.norm", {"momentum": 0.05})
)
def deform() -> nn.Module:
    return nn.Sequential(DeformBlock(4, 8), DeformBlock(8, 8, offset_groups=2), nn.Conv2d(8, 2, 1))


# --- MAML-style: raw parameters in a ParameterDict, forward(x, params=None) -----------------------


class FunctionalConvNet(nn.Module):
    def __init__(self, in_channels: int, n_way: int, hidden: int = 32, n_conv: int = 4) -> None:
        super().__init__()
        self.n_conv = n_conv
        self.params = nn.ParameterDict()
        c = in_channels
        for i in range(n_conv):
            self.params[f"conv{i}_w"] = nn.Parameter(torch.empty(hidden, c, 3, 3))
            nn.init.kaiming_normal_(self.params[f"conv{i}_w"])
            self.params[f"conv{i}_b"] = nn.Parameter(torch.zeros(hidden))
            self.params[f"bn{i}_w"] = nn.Parameter(torch.ones(hidden))
            self.params[f"bn{i}_b"] = nn.Parameter(torch.zeros(hidden))
            c = hidden
        self.params["fc_w"] = nn.Parameter(torch.randn(n_way, hidden) * math.sqrt(2 / hidden))
        self.params["fc_b"] = nn.Parameter(torch.zeros(n_way))

    def forward(self, x: Tensor, params: Optional[dict[str, Tensor]] = None) -> Tensor:
        p = dict(self.params) if params is None else params
        for i in range(self.n_conv):
            x = F.conv2d(x, p[f"conv{i}_w"], p[f"conv{i}_b"], padding=1)
            x = F.batch_norm(x, None, None, p[f"bn{i}_w"], p[f"bn{i}_b"], training=True)
            x = F.max_pool2d(F.relu(x), 2)
        return F.linear(x.mean((2, 3)), p["fc_w"], p["fc_b"])


@heldout("maml_parameterdict", lambda: ((rand(5, 1, 16, 16),), {}))
def maml() -> nn.Module:
    return FunctionalConvNet(1, 5, hidden=8, n_conv=3)
