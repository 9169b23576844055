# ruff: noqa: B007, UP008, UP035  (the authors' habits are kept: this set measures code as people write it)
"""Scientific nets: a fixed-step neural ODE classifier, SIREN, a physics-informed MLP."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
from torch import nn

from .spec import heldout, rand

# --- neural ODE (Chen et al. 2018) with a fixed-step RK4 solver ---------------------------------


def norm(dim):
    return nn.GroupNorm(min(32, dim), dim)


class ConcatConv2d(nn.Module):
    """A conv that sees the time t as an extra constant input channel."""

    def __init__(
        self,
        dim_in,
        dim_out,
        ksize=3,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        transpose=False,
    ):
        super(ConcatConv2d, self).__init__()
        module = nn.ConvTranspose2d if transpose else nn.Conv2d
        self._layer = module(
            dim_in + 1,
            dim_out,
            kernel_size=ksize,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
        )

    def forward(self, t, x):
        tt = torch.ones_like(x[:, :1, :, :]) * t
        return self._layer(torch.cat([tt, x], 1))


class ODEfunc(nn.Module):
    def __init__(self, dim):
        super(ODEfunc, self).__init__()
        self.norm1 = norm(dim)
        self.relu = nn.ReLU(inplace=True)
        self.conv1 = ConcatConv2d(dim, dim, 3, 1, 1)
        self.norm2 = norm(dim)
        self.conv2 = ConcatConv2d(dim, dim, 3, 1, 1)
        self.norm3 = norm(dim)
        self.nfe = 0

    def forward(self, t, x):
        self.nfe += 1
        out = self.relu(self.norm1(x))
        out = self.relu(self.norm2(self.conv1(t, out)))
        return self.norm3(self.conv2(t, out))


def rk4_step(func, t, dt, y):
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6


def euler_step(func, t, dt, y):
    return y + dt * func(t, y)


SOLVERS = {"rk4": rk4_step, "euler": euler_step}


class ODEBlock(nn.Module):
    def __init__(self, odefunc, t1=1.0, steps=4, method="rk4"):
        super(ODEBlock, self).__init__()
        self.odefunc = odefunc
        self.register_buffer("integration_time", torch.linspace(0.0, t1, steps + 1))
        self.step = SOLVERS[method]

    def forward(self, x):
        ts = self.integration_time.type_as(x)
        for t0, t1 in zip(ts[:-1], ts[1:]):
            x = self.step(self.odefunc, t0, t1 - t0, x)
        return x

    @property
    def nfe(self):
        return self.odefunc.nfe


def ode_classifier(dim=64, num_classes=10, steps=4, method="rk4"):
    downsampling_layers = [
        nn.Conv2d(1, dim, 3, 1),
        norm(dim),
        nn.ReLU(inplace=True),
        nn.Conv2d(dim, dim, 4, 2, 1),
        norm(dim),
        nn.ReLU(inplace=True),
        nn.Conv2d(dim, dim, 4, 2, 1),
    ]
    feature_layers = [ODEBlock(ODEfunc(dim), steps=steps, method=method)]
    fc_layers = [
        norm(dim),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(dim, num_classes),
    ]
    return nn.Sequential(*downsampling_layers, *feature_layers, *fc_layers)


@heldout(
    "neural_ode_mnist",
    example=lambda: ((rand(2, 1, 28, 28),), {}),
)
def neural_ode_mnist() -> nn.Module:
    torch.manual_seed(70)
    return ode_classifier(dim=16, steps=3)


# --- SIREN (Sitzmann et al. 2020) -------------------------------------------------------------


class SineLayer(nn.Module):
    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                self.linear.weight.uniform_(
                    -np.sqrt(6 / self.in_features) / self.omega_0,
                    np.sqrt(6 / self.in_features) / self.omega_0,
                )

    def forward(self, input):
        return torch.sin(self.omega_0 * self.linear(input))


class Siren(nn.Module):
    def __init__(
        self,
        in_features,
        hidden_features,
        hidden_layers,
        out_features,
        outermost_linear=False,
        first_omega_0=30,
        hidden_omega_0=30.0,
    ):
        super().__init__()
        self.net = []
        self.net.append(
            SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)
        )
        for i in range(hidden_layers):
            self.net.append(
                SineLayer(hidden_features, hidden_features, is_first=False, omega_0=hidden_omega_0)
            )
        if outermost_linear:
            final_linear = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                final_linear.weight.uniform_(
                    -np.sqrt(6 / hidden_features) / hidden_omega_0,
                    np.sqrt(6 / hidden_features) / hidden_omega_0,
                )
            self.net.append(final_linear)
        else:
            self.net.append(
                SineLayer(hidden_features, out_features, is_first=False, omega_0=hidden_omega_0)
            )
        self.net = nn.Sequential(*self.net)

    def forward(self, coords):
        coords = (
            coords.clone().detach().requires_grad_(True)
        )  # allows to take derivative w.r.t. input
        output = self.net(coords)
        return output, coords


def get_mgrid(sidelen, dim=2):
    tensors = tuple(dim * [torch.linspace(-1, 1, steps=sidelen)])
    mgrid = torch.stack(torch.meshgrid(*tensors, indexing="ij"), dim=-1)
    return mgrid.reshape(-1, dim)


@heldout(
    "siren_image",
    example=lambda: ((get_mgrid(32).unsqueeze(0),), {}),
)
def siren_image() -> nn.Module:
    torch.manual_seed(72)
    return Siren(
        in_features=2, out_features=3, hidden_features=64, hidden_layers=3, outermost_linear=True
    )


# --- PINN (Raissi et al. 2019 style) for Burgers' equation ------------------------------------


class FourierEmbedding(nn.Module):
    def __init__(
        self, in_dim: int, num_freqs: int = 16, sigma: float = 1.0, trainable: bool = False
    ):
        super().__init__()
        B = torch.randn(in_dim, num_freqs) * sigma
        if trainable:
            self.B = nn.Parameter(B)
        else:
            self.register_buffer("B", B)
        self.out_dim = 2 * num_freqs

    def forward(self, x):
        proj = 2 * math.pi * x @ self.B
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)


class PhysicsInformedNN(nn.Module):
    def __init__(
        self,
        layers: Sequence[int],
        lb,
        ub,
        activation=torch.tanh,
        nu: float = 0.01 / math.pi,
        fourier: dict | None = None,
    ):
        super().__init__()
        self.register_buffer("lb", torch.as_tensor(lb, dtype=torch.float32))
        self.register_buffer("ub", torch.as_tensor(ub, dtype=torch.float32))
        self.embedding = FourierEmbedding(layers[0], **fourier) if fourier is not None else None
        widths = [self.embedding.out_dim if self.embedding is not None else layers[0], *layers[1:]]
        self.linears = nn.ModuleList()
        for i in range(len(widths) - 1):
            lin = nn.Linear(widths[i], widths[i + 1])
            nn.init.xavier_normal_(lin.weight, gain=1.0)
            nn.init.zeros_(lin.bias)
            self.linears.append(lin)
        self.activation = activation
        self.nu = nu

    def forward(self, x, t):
        h = torch.cat([x, t], dim=1)
        h = 2.0 * (h - self.lb) / (self.ub - self.lb) - 1.0
        if self.embedding is not None:
            h = self.embedding(h)
        for lin in self.linears[:-1]:
            h = self.activation(lin(h))
        return self.linears[-1](h)

    def residual(self, x, t):
        """f = u_t + u u_x - nu u_xx, by autograd (used in training, not in forward)."""
        x = x.requires_grad_(True)
        t = t.requires_grad_(True)
        u = self(x, t)
        u_t, u_x = torch.autograd.grad(u.sum(), (t, x), create_graph=True)
        u_xx = torch.autograd.grad(u_x.sum(), x, create_graph=True)[0]
        return u_t + u * u_x - self.nu * u_xx


@heldout(
    "pinn_burgers",
    example=lambda: ((rand(64, 1, seed=1).clamp(-1, 1), rand(64, 1, seed=2).abs().clamp(0, 1)), {}),
)
def pinn_burgers() -> nn.Module:
    torch.manual_seed(73)
    return PhysicsInformedNN(
        [2, 32, 32, 32, 1], lb=[-1.0, 0.0], ub=[1.0, 1.0], fourier={"num_freqs": 16, "sigma": 2.0}
    )
