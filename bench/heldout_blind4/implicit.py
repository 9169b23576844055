"""Flows, implicit and energy-style models, anomaly detection.

RealNVP couplings whose masks are buffers, MAF built from MADE with masked Linear subclasses and
permutation buffers, a deep equilibrium layer that takes its cell as a constructor argument,
a neural cellular automaton with fixed Sobel filters and a zero-initialised update rule, and Deep
SVDD with bias-free layers and a hypersphere center kept as a buffer.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- RealNVP


class CouplingLayer(nn.Module):
    def __init__(self, mask, hidden=64, n_hidden=2, s_act="tanh", t_act="relu"):
        super().__init__()
        self.register_buffer("mask", mask)
        dim = mask.numel()
        acts = {"tanh": nn.Tanh, "relu": nn.ReLU, "leaky": nn.LeakyReLU}

        def net(act):
            layers = [nn.Linear(dim, hidden), acts[act]()]
            for _ in range(n_hidden - 1):
                layers += [nn.Linear(hidden, hidden), acts[act]()]
            return nn.Sequential(*layers, nn.Linear(hidden, dim))

        self.s = net(s_act)
        self.t = net(t_act)
        self.s_scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x_m = x * self.mask
        s = self.s_scale * torch.tanh(self.s(x_m)) * (1 - self.mask)
        t = self.t(x_m) * (1 - self.mask)
        y = x_m + (1 - self.mask) * (x * torch.exp(s) + t)
        return y, s.sum(dim=1)

    def inverse(self, y):
        y_m = y * self.mask
        s = self.s_scale * torch.tanh(self.s(y_m)) * (1 - self.mask)
        t = self.t(y_m) * (1 - self.mask)
        return y_m + (1 - self.mask) * (y - t) * torch.exp(-s)


class RealNVP(nn.Module):
    def __init__(self, dim, n_couplings=4, **coupling_kwargs):
        super().__init__()
        base = (torch.arange(dim) % 2).float()
        self.couplings = nn.ModuleList(
            [
                CouplingLayer(base if i % 2 == 0 else 1 - base, **coupling_kwargs)
                for i in range(n_couplings)
            ]
        )
        self.register_buffer("prior_loc", torch.zeros(dim))

    def forward(self, x):
        log_det = x.new_zeros(x.shape[0])
        for c in self.couplings:
            x, ld = c(x)
            log_det = log_det + ld
        log_pz = -0.5 * ((x - self.prior_loc) ** 2).sum(1) - 0.5 * x.shape[1] * math.log(
            2 * math.pi
        )
        return x, log_pz + log_det


@heldout("realnvp_tabular", lambda: ((rand(16, 6),), {}), edit=("couplings.2", {"hidden": 32}))
def realnvp_tabular():
    return RealNVP(6, n_couplings=4, hidden=48, n_hidden=2, t_act="leaky")


# --------------------------------------------------------------------------- MAF


class MaskedLinear(nn.Linear):
    """A Linear layer with a fixed binary connectivity mask on its weights."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", torch.ones(out_features, in_features))

    def set_mask(self, mask):
        self.mask.data.copy_(mask.float().t())

    def forward(self, input):
        return F.linear(input, self.mask * self.weight, self.bias)


class MADE(nn.Module):
    def __init__(self, nin, hidden_sizes, nout, num_masks=1, natural_ordering=False, seed=0):
        super().__init__()
        self.nin, self.nout, self.hidden_sizes = nin, nout, hidden_sizes
        assert self.nout % self.nin == 0, "nout must be integer multiple of nin"
        layers = []
        hs = [nin] + hidden_sizes + [nout]
        for h0, h1 in zip(hs, hs[1:]):
            layers.extend([MaskedLinear(h0, h1), nn.ReLU()])
        layers.pop()
        self.net = nn.Sequential(*layers)
        self.natural_ordering, self.num_masks, self.seed = natural_ordering, num_masks, seed
        self.m = {}
        self.update_masks()

    def update_masks(self):
        L = len(self.hidden_sizes)
        g = torch.Generator().manual_seed(self.seed)
        self.m[-1] = (
            torch.arange(self.nin)
            if self.natural_ordering
            else torch.randperm(self.nin, generator=g)
        )
        for layer in range(L):
            low = int(self.m[layer - 1].min())
            self.m[layer] = torch.randint(
                low, self.nin - 1, (self.hidden_sizes[layer],), generator=g
            )
        masks = [self.m[i - 1][:, None] <= self.m[i][None, :] for i in range(L)]
        masks.append(self.m[L - 1][:, None] < self.m[-1][None, :])
        if self.nout > self.nin:
            k = self.nout // self.nin
            masks[-1] = torch.cat([masks[-1]] * k, dim=1)
        for lin, m in zip([mod for mod in self.net if isinstance(mod, MaskedLinear)], masks):
            lin.set_mask(m)

    def forward(self, x):
        return self.net(x)


class MAFLayer(nn.Module):
    def __init__(self, dim, hidden_sizes, reverse=True, seed=0):
        super().__init__()
        self.made = MADE(dim, list(hidden_sizes), 2 * dim, natural_ordering=True, seed=seed)
        self.reverse = reverse

    def forward(self, x):
        out = self.made(x)
        mu, log_alpha = out.chunk(2, dim=1)
        u = (x - mu) * torch.exp(0.5 * log_alpha)
        if self.reverse:
            u = u.flip(dims=(1,))
        return u, 0.5 * log_alpha.sum(dim=1)


class BatchNormFlow(nn.Module):
    def __init__(self, dim, momentum=0.95, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(dim))
        self.beta = nn.Parameter(torch.zeros(dim))
        self.momentum, self.eps = momentum, eps
        self.register_buffer("running_mean", torch.zeros(dim))
        self.register_buffer("running_var", torch.ones(dim))

    def forward(self, x):
        if self.training:
            mean, var = x.mean(0), x.var(0) + self.eps
            self.running_mean.mul_(self.momentum).add_(mean.detach() * (1 - self.momentum))
            self.running_var.mul_(self.momentum).add_(var.detach() * (1 - self.momentum))
        else:
            mean, var = self.running_mean, self.running_var
        y = (x - mean) / var.sqrt() * torch.exp(self.gamma) + self.beta
        return y, (self.gamma - 0.5 * torch.log(var)).sum(-1).expand(x.shape[0])


class FlowSequential(nn.Sequential):
    def forward(self, x):
        total = x.new_zeros(x.shape[0])
        for module in self:
            x, ld = module(x)
            total = total + ld
        return x, total


@heldout("maf_made", lambda: ((rand(32, 5),), {}), train=True)
def maf_made():
    mods = []
    for i in range(3):
        mods += [MAFLayer(5, (40, 40), reverse=True, seed=i), BatchNormFlow(5)]
    return FlowSequential(*mods)


# --------------------------------------------------------------------------- DEQ


class ResNetLayer(nn.Module):
    def __init__(self, n_channels, n_inner_channels, kernel_size=3, num_groups=8):
        super().__init__()
        self.conv1 = nn.Conv2d(
            n_channels, n_inner_channels, kernel_size, padding=kernel_size // 2, bias=False
        )
        self.conv2 = nn.Conv2d(
            n_inner_channels, n_channels, kernel_size, padding=kernel_size // 2, bias=False
        )
        self.norm1 = nn.GroupNorm(num_groups, n_inner_channels)
        self.norm2 = nn.GroupNorm(num_groups, n_channels)
        self.norm3 = nn.GroupNorm(num_groups, n_channels)
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)

    def forward(self, z, x):
        y = self.norm1(F.relu(self.conv1(z)))
        return self.norm3(F.relu(z + self.norm2(x + self.conv2(y))))


def forward_iteration(f, x0, max_iter=50, tol=1e-2):
    f0 = f(x0)
    res = []
    for _ in range(max_iter):
        x = f0
        f0 = f(x)
        res.append((f0 - x).norm().item() / (1e-5 + f0.norm().item()))
        if res[-1] < tol:
            break
    return f0, res


class DEQFixedPoint(nn.Module):
    def __init__(self, f, solver, **kwargs):
        super().__init__()
        self.f = f
        self.solver = solver
        self.kwargs = kwargs

    def forward(self, x):
        with torch.no_grad():
            z, self.forward_res = self.solver(
                lambda z: self.f(z, x), torch.zeros_like(x), **self.kwargs
            )
        return self.f(z, x)  # one step with gradients (the Jacobian-free backward)


def deq_model(chan=16, inner=32, n_classes=10, image_size=16, **solver_kwargs):
    f = ResNetLayer(chan, inner, kernel_size=3)
    return nn.Sequential(
        nn.Conv2d(3, chan, kernel_size=3, bias=True, padding=1),
        nn.BatchNorm2d(chan),
        DEQFixedPoint(f, forward_iteration, **solver_kwargs),
        nn.BatchNorm2d(chan),
        nn.AvgPool2d(image_size // 4, image_size // 4),
        nn.Flatten(),
        nn.Linear(chan * 4 * 4, n_classes),
    )


@heldout("deq_fixed_point", lambda: ((rand(2, 3, 16, 16),), {}))
def deq_fixed_point():
    return deq_model(chan=8, inner=16, tol=1e-3, max_iter=20)


# --------------------------------------------------------------------------- Neural CA


class CAModel(nn.Module):
    """Growing neural cellular automata (Mordvintsev et al.); fire_rate masks updates in training."""

    def __init__(self, channel_n=16, fire_rate=0.5, hidden_size=128):
        super().__init__()
        self.channel_n, self.fire_rate = channel_n, fire_rate
        ident = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
        sobel_x = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]) / 8.0
        kernel = torch.stack([ident, sobel_x, sobel_x.T])  # (3, 3, 3)
        self.register_buffer("kernel", kernel.repeat(channel_n, 1, 1).unsqueeze(1))
        self.fc0 = nn.Conv2d(channel_n * 3, hidden_size, 1)
        self.fc1 = nn.Conv2d(hidden_size, channel_n, 1, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4], kernel_size=3, stride=1, padding=1) > 0.1

    def perceive(self, x):
        return F.conv2d(F.pad(x, (1, 1, 1, 1), "circular"), self.kernel, groups=self.channel_n)

    def update(self, x, generator=None):
        pre_life = self.alive(x)
        dx = self.fc1(F.relu(self.fc0(self.perceive(x))))
        if self.training:
            mask = torch.rand(x[:, :1].shape, generator=generator) <= self.fire_rate
            dx = dx * mask.float()
        x = x + dx
        life = pre_life & self.alive(x)
        return x * life.float()

    def forward(self, x, steps=8):
        for _ in range(steps):
            x = self.update(x)
        return x


def _nca_seed():
    x = torch.zeros(2, 16, 24, 24)
    x[:, 3:, 12, 12] = 1.0
    x[:, :, 10:14, 10:14] += 0.2 * rand(2, 16, 4, 4).abs()
    return (x,), {"steps": 6}


@heldout("neural_ca", _nca_seed)
def neural_ca():
    m = CAModel(channel_n=16, hidden_size=96)
    with torch.no_grad():
        m.fc1.weight.normal_(0, 0.02)  # as if trained a little, so the forward does something
    return m


# --------------------------------------------------------------------------- Deep SVDD


class CIFAR10_LeNet(nn.Module):
    """Ruff et al.'s encoder: no biases and affine-free batch norm (to avoid a trivial hypersphere)."""

    def __init__(self, rep_dim=128, in_channels=3, widths=(32, 64, 128)):
        super().__init__()
        self.rep_dim = rep_dim
        self.pool = nn.MaxPool2d(2, 2)
        c = in_channels
        for i, w in enumerate(widths, start=1):
            setattr(self, f"conv{i}", nn.Conv2d(c, w, 5, bias=False, padding=2))
            setattr(self, f"bn2d{i}", nn.BatchNorm2d(w, eps=1e-04, affine=False))
            c = w
        self.n_convs = len(widths)
        self.fc1 = nn.Linear(c * 4 * 4, self.rep_dim, bias=False)

    def forward(self, x):
        for i in range(1, self.n_convs + 1):
            x = self.pool(F.leaky_relu(getattr(self, f"bn2d{i}")(getattr(self, f"conv{i}")(x))))
        return self.fc1(x.view(x.size(0), -1))


class DeepSVDD(nn.Module):
    def __init__(self, net: nn.Module, objective="one-class", nu=0.1):
        super().__init__()
        assert objective in ("one-class", "soft-boundary"), (
            "Objective must be either 'one-class' or 'soft-boundary'."
        )
        self.net, self.objective, self.nu = net, objective, nu
        self.register_buffer("c", torch.zeros(net.rep_dim))
        self.R = nn.Parameter(torch.tensor(0.0), requires_grad=False)

    @torch.no_grad()
    def init_center_c(self, x, eps=0.1):
        c = self.net(x).mean(0)
        c[(abs(c) < eps) & (c < 0)] = -eps
        c[(abs(c) < eps) & (c > 0)] = eps
        self.c.copy_(c)

    def forward(self, x):
        dist = torch.sum((self.net(x) - self.c) ** 2, dim=1)
        return dist - self.R**2 if self.objective == "soft-boundary" else dist


@heldout("deep_svdd", lambda: ((rand(4, 3, 32, 32),), {}))
def deep_svdd():
    model = DeepSVDD(CIFAR10_LeNet(rep_dim=64, widths=(8, 16, 32)), objective="soft-boundary")
    model.eval()
    model.init_center_c(rand(8, 3, 32, 32, seed=3))
    return model
