"""Unusual layers: capsules, spiking neurons, hypernetworks, mixture density and Bayesian nets."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def squash(x, dim=-1):
    sq = (x**2).sum(dim, keepdim=True)
    return sq / (1.0 + sq) * x / torch.sqrt(sq + 1e-8)


class PrimaryCaps(nn.Module):
    def __init__(self, num_capsules=8, in_channels=64, out_channels=8, kernel_size=9, stride=2):
        super().__init__()
        self.capsules = nn.ModuleList(
            [
                nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride)
                for _ in range(num_capsules)
            ]
        )

    def forward(self, x):
        u = torch.stack([capsule(x) for capsule in self.capsules], dim=1)  # (b, caps, c, h, w)
        u = u.flatten(2).transpose(1, 2)  # (b, routes, caps)
        return squash(u)


class DigitCaps(nn.Module):
    def __init__(
        self, num_capsules=10, num_routes=8 * 4 * 4, in_channels=8, out_channels=16, routing_iters=3
    ):
        super().__init__()
        self.num_routes, self.num_capsules, self.routing_iters = (
            num_routes,
            num_capsules,
            routing_iters,
        )
        self.W = nn.Parameter(
            0.01 * torch.randn(1, num_routes, num_capsules, out_channels, in_channels)
        )

    def forward(self, x):
        b = x.size(0)
        x = x[:, :, None, :, None]  # (b, routes, 1, in, 1)
        u_hat = torch.matmul(self.W, x).squeeze(-1)  # (b, routes, caps, out)
        b_ij = torch.zeros(b, self.num_routes, self.num_capsules, 1, device=x.device)
        for it in range(self.routing_iters):
            c_ij = F.softmax(b_ij, dim=2)
            v_j = squash((c_ij * u_hat).sum(1, keepdim=True))
            if it < self.routing_iters - 1:
                b_ij = b_ij + (u_hat * v_j).sum(-1, keepdim=True)
        return v_j.squeeze(1)


class CapsDecoder(nn.Module):
    def __init__(self, caps_dim=16, n_caps=10, out_pixels=28 * 28):
        super().__init__()
        self.reconstruction_layers = nn.Sequential(
            nn.Linear(caps_dim * n_caps, 256), nn.ReLU(inplace=True),
            nn.Linear(256, 512), nn.ReLU(inplace=True),
            nn.Linear(512, out_pixels), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, v):
        lengths = v.norm(dim=-1)
        mask = F.one_hot(lengths.argmax(1), v.shape[1]).unsqueeze(-1).to(v)
        return self.reconstruction_layers((v * mask).flatten(1)), lengths


class CapsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_layer = nn.Sequential(nn.Conv2d(1, 64, kernel_size=9, stride=1), nn.ReLU())
        self.primary_capsules = PrimaryCaps()
        self.digit_capsules = DigitCaps(num_routes=8 * 6 * 6)
        self.decoder = CapsDecoder()

    def forward(self, data):
        out = self.digit_capsules(self.primary_capsules(self.conv_layer(data)))
        recon, lengths = self.decoder(out)
        return lengths, recon


@heldout("capsnet", example=lambda: ((rand(2, 1, 28, 28),), {}),
         edit=("digit_capsules", {"routing_iters": 1}))  # fmt: skip
def capsnet():
    torch.manual_seed(50)
    return CapsNet()


# spiking: leaky integrate-and-fire with a surrogate gradient


class FastSigmoidSpike(torch.autograd.Function):
    scale = 10.0

    @staticmethod
    def forward(ctx, v):
        ctx.save_for_backward(v)
        return (v > 0).to(v)

    @staticmethod
    def backward(ctx, grad):
        (v,) = ctx.saved_tensors
        return grad / (FastSigmoidSpike.scale * v.abs() + 1.0) ** 2


class LIF(nn.Module):
    def __init__(self, beta=0.9, threshold=1.0, reset="subtract", learn_beta=False):
        super().__init__()
        if learn_beta:
            self.beta = nn.Parameter(torch.tensor(beta))
        else:
            self.register_buffer("beta", torch.tensor(beta))
        self.threshold = threshold
        self.reset = reset

    def forward(self, cur, mem):
        mem = self.beta * mem + cur
        spk = FastSigmoidSpike.apply(mem - self.threshold)
        if self.reset == "subtract":
            mem = mem - spk * self.threshold
        else:
            mem = mem * (1 - spk)
        return spk, mem


class SpikingMLP(nn.Module):
    def __init__(self, num_inputs=100, num_hidden=128, num_outputs=10, num_steps=10, **lif_kwargs):
        super().__init__()
        self.num_steps = num_steps
        self.fc1 = nn.Linear(num_inputs, num_hidden)
        self.lif1 = LIF(**lif_kwargs)
        self.fc2 = nn.Linear(num_hidden, num_outputs)
        self.lif2 = LIF(**lif_kwargs)

    def forward(self, x):
        mem1 = torch.zeros(x.shape[0], self.fc1.out_features)
        mem2 = torch.zeros(x.shape[0], self.fc2.out_features)
        spikes = []
        for _ in range(self.num_steps):
            spk1, mem1 = self.lif1(self.fc1(x), mem1)
            spk2, mem2 = self.lif2(self.fc2(spk1), mem2)
            spikes.append(spk2)
        return torch.stack(spikes).sum(0)


@heldout("lif_snn", example=lambda: ((rand(4, 100, seed=1) * 2,), {}),
         edit=("lif1", {"reset": "zero"}))  # fmt: skip
def lif_snn():
    torch.manual_seed(51)
    return SpikingMLP(beta=0.8, learn_beta=True)


# hypernetwork: a small net emits the weights of a target MLP per conditioning vector


class HyperLinearSpec:
    def __init__(self, in_f, out_f):
        self.in_f, self.out_f = in_f, out_f

    @property
    def numel(self):
        return self.in_f * self.out_f + self.out_f


class HyperNetwork(nn.Module):
    def __init__(self, cond_dim, target_sizes=(2, 32, 32, 1), hidden=64):
        super().__init__()
        self.specs = [HyperLinearSpec(a, b) for a, b in zip(target_sizes[:-1], target_sizes[1:])]
        self.body = nn.Sequential(
            nn.Linear(cond_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.heads = nn.ModuleList(nn.Linear(hidden, s.numel) for s in self.specs)
        for h in self.heads:
            nn.init.normal_(h.weight, std=1e-3)

    def forward(self, cond, coords):
        z = self.body(cond)
        h = coords
        for i, (spec, head) in enumerate(zip(self.specs, self.heads)):
            p = head(z)
            w = p[:, : spec.in_f * spec.out_f].view(-1, spec.out_f, spec.in_f)
            b = p[:, spec.in_f * spec.out_f :]
            h = torch.einsum("boi,bni->bno", w, h) + b[:, None]
            if i < len(self.specs) - 1:
                h = torch.sin(h)
        return h


@heldout("hypernetwork", example=lambda: ((rand(3, 16, seed=2), rand(3, 50, 2, seed=3)), {}))
def hypernetwork():
    torch.manual_seed(52)
    return HyperNetwork(16)


# mixture density network


class MDN(nn.Module):
    def __init__(self, dim_in, dim_out, n_components, hidden_dim=64, activation=nn.Tanh):
        super().__init__()
        self.dim_out, self.n_components = dim_out, n_components
        self.pi_network = nn.Sequential(
            nn.Linear(dim_in, hidden_dim), activation(), nn.Linear(hidden_dim, n_components)
        )
        self.normal_network = nn.Sequential(
            nn.Linear(dim_in, hidden_dim),
            activation(),
            nn.Linear(hidden_dim, 2 * dim_out * n_components),
        )

    def forward(self, x):
        log_pi = torch.log_softmax(self.pi_network(x), dim=-1)
        params = self.normal_network(x).view(-1, self.n_components, 2 * self.dim_out)
        mean, log_sd = params.split(self.dim_out, dim=-1)
        return log_pi, mean, torch.exp(log_sd.clamp(-7, 7))


@heldout("mixture_density", example=lambda: ((rand(16, 4, seed=4),), {}))
def mixture_density():
    torch.manual_seed(53)
    return MDN(4, 2, n_components=5, activation=nn.ELU)


# Bayes by backprop


class BayesLinear(nn.Linear):
    """A Linear whose weights are sampled from a learned Gaussian (local reparameterisation off)."""

    def __init__(
        self, in_features, out_features, bias=True, prior_sigma=0.1, posterior_rho_init=-5.0
    ):
        super().__init__(in_features, out_features, bias=bias)
        self.prior_sigma = prior_sigma
        self.weight_rho = nn.Parameter(torch.full((out_features, in_features), posterior_rho_init))
        self.bias_rho = (
            nn.Parameter(torch.full((out_features,), posterior_rho_init)) if bias else None
        )
        self.sample = True

    def forward(self, x):
        if not self.sample:
            return super().forward(x)
        w_sigma = F.softplus(self.weight_rho)
        w = self.weight + w_sigma * torch.randn_like(w_sigma)
        b = None
        if self.bias is not None:
            b_sigma = F.softplus(self.bias_rho)
            b = self.bias + b_sigma * torch.randn_like(b_sigma)
        return F.linear(x, w, b)

    def kl(self):
        sigma = F.softplus(self.weight_rho)
        p = self.prior_sigma
        return (torch.log(p / sigma) + (sigma**2 + self.weight**2) / (2 * p**2) - 0.5).sum()


class BayesMLP(nn.Module):
    def __init__(self, sizes=(20, 64, 64, 3), prior_sigma=0.1):
        super().__init__()
        n = len(sizes) - 1
        for i in range(n):
            setattr(
                self,
                f"blinear{i + 1}",
                BayesLinear(sizes[i], sizes[i + 1], prior_sigma=prior_sigma),
            )
        self.n = n

    def forward(self, x):
        for i in range(self.n):
            x = getattr(self, f"blinear{i + 1}")(x)
            if i < self.n - 1:
                x = F.relu(x)
        return x

    def kl(self):
        return sum(m.kl() for m in self.modules() if isinstance(m, BayesLinear))


@heldout("bayes_mlp", example=lambda: ((rand(8, 20, seed=5),), {}),
         edit=("blinear2", {"prior_sigma": 1.0}))  # fmt: skip
def bayes_mlp():
    torch.manual_seed(54)
    return BayesMLP()
