"""Activations passed as functions (issue 58 item 4, the blind set's fourth cause): kept as
``self.act = act`` (SwiGLU), handed to every stage (FiLM), closed over by a lambda, passed as a pair
unpacked into attributes and one kept in a dict (a Gaussian policy), and one kept only by its name,
whose form is refused in a sentence (it cannot be rebuilt exactly)."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- SwiGLU MLP with the activation passed as a function and kept ------------------------------


class GLUMLP(nn.Module):
    def __init__(self, dim, hidden_dim, act=F.silu, bias=False):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=bias)
        self.w3 = nn.Linear(dim, hidden_dim, bias=bias)
        self.w2 = nn.Linear(hidden_dim, dim, bias=bias)
        self.act = act

    def forward(self, x):
        return self.w2(self.act(self.w1(x)) * self.w3(x))


class GLUBlock(nn.Module):
    def __init__(self, dim, hidden_dim, act=F.silu):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = GLUMLP(dim, hidden_dim, act)

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class GLUStack(nn.Module):
    def __init__(self, dim, hidden_dim, depth, act=F.silu):
        super().__init__()
        self.blocks = nn.Sequential(*[GLUBlock(dim, hidden_dim, act) for _ in range(depth)])
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        return self.out(self.blocks(x))


case(
    "swiglu_function_act",
    lambda: GLUStack(16, 40, depth=2, act=F.gelu),
    args(lambda: randn(2, 5, 16)),
    edit=("out", {"bias": False}),
    styles="act=F.silu default given F.gelu, kept as self.act = act",
)

# --- FiLM network (Perez et al.): per-stage widths, a function activation used only in forward --


class FiLMBlock(nn.Module):
    def __init__(self, in_ch, out_ch, cond_dim, activation=torch.relu):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, 3, padding=1)
        self.norm = nn.BatchNorm2d(out_ch, affine=False)
        self.film = nn.Linear(cond_dim, 2 * out_ch)
        self.activation = activation

    def forward(self, x, cond):
        gamma, beta = self.film(cond).chunk(2, dim=1)
        x = self.norm(self.conv(x))
        return self.activation(gamma[..., None, None] * x + beta[..., None, None])


class FiLMNet(nn.Module):
    def __init__(self, in_ch, widths, cond_dim, n_classes, activation=torch.relu):
        super().__init__()
        self.blocks = nn.ModuleList()
        for i in range(len(widths)):
            prev = in_ch if i == 0 else widths[i - 1]
            self.blocks.append(FiLMBlock(prev, widths[i], cond_dim, activation))
        self.head = nn.Linear(widths[-1], n_classes)

    def forward(self, x, cond):
        for b in self.blocks:
            x = b(x, cond)
        return self.head(x.mean((2, 3)))


case(
    "film_stage_widths",
    lambda: FiLMNet(3, [8, 12, 16], cond_dim=6, n_classes=4, activation=torch.tanh),
    args(lambda: randn(2, 3, 12, 12), lambda: randn(2, 6, seed=1)),
    edit=("head", {"bias": False}),
    styles="widths[i] and widths[i - 1] per stage, activation=torch.relu given torch.tanh",
)

# --- A pointwise MLP whose activation only a lambda's closure keeps (read back from the closure) --


class ClosureMLP(nn.Module):
    def __init__(self, sizes, activation=F.relu):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.Linear(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)]
        )
        self.forward_act = lambda x: activation(x)

    def forward(self, x):
        for layer in self.layers[:-1]:
            x = self.forward_act(layer(x))
        return self.layers[-1](x)


case(
    "closure_activation_mlp",
    lambda: ClosureMLP([10, 20, 20, 3], activation=F.elu),
    args(lambda: randn(4, 10)),
    edit=("layers.2", {"bias": False}),
    styles="sizes[i], sizes[i + 1] in range(len(sizes) - 1), an activation kept only in a lambda",
)

# --- A Gaussian policy (RL): two activations passed as a pair, unpacked into attributes ----------


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=(64, 64), activations=(torch.tanh, None)):
        super().__init__()
        self.hidden_act, self.out_act = activations
        layers = []
        prev = obs_dim
        for h in hidden:
            layers.append(nn.Linear(prev, h))
            prev = h
        self.body = nn.ModuleList(layers)
        self.mu = nn.Linear(prev, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.scales = {"mu": 1.0, "hidden": activations[0]}

    def forward(self, obs):
        x = obs
        for layer in self.body:
            x = self.hidden_act(layer(x))
        mu = self.mu(x)
        if self.out_act is not None:
            mu = self.out_act(mu)
        return mu, self.log_std.exp().expand_as(mu)


case(
    "gaussian_policy_act_pair",
    lambda: GaussianPolicy(7, 3, hidden=(16, 12), activations=(F.elu, torch.tanh)),
    args(lambda: randn(4, 7)),
    edit=("mu", {"bias": False}),
    styles="activations=(torch.tanh, None) unpacked into self.hidden_act, self.out_act; one in a dict",
)

# --- An activation kept only by its name: cannot be rebuilt exactly, so its form is refused ------


class NamedActMLP(nn.Module):
    def __init__(self, d_in, d_hidden, d_out, activation=F.relu):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)
        self.act_name = activation.__name__

    def forward(self, x):
        return self.fc2(getattr(F, self.act_name)(self.fc1(x)))


case(
    "named_activation_mlp",
    lambda: NamedActMLP(6, 10, 2, activation=F.elu),
    args(lambda: randn(3, 6)),
    edit=("fc2", {"bias": False}),
    styles="activation=F.relu given F.elu and kept only as its __name__ (used by name in forward)",
)
