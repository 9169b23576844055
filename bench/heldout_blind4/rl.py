"""Model-free reinforcement learning: value heads, actor-critics and an IMPALA policy.

Written the way RL repos tend to be: Atari-style conv trunks, noisy layers that keep their noise
in buffers, orthogonal init helpers, argparse namespaces passed straight into the networks, twin
critics built from an ``mlp`` helper, and IMPALA's residual conv sequences.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- DQN (dueling, noisy)


class NoisyLinear(nn.Linear):
    """Factorised Gaussian noisy layer (Fortunato et al.); noise lives in buffers."""

    def __init__(self, in_features, out_features, sigma0=0.5, bias=True):
        super().__init__(in_features, out_features, bias=bias)
        self.sigma0 = sigma0
        self.weight_sigma = nn.Parameter(
            torch.full((out_features, in_features), sigma0 / math.sqrt(in_features))
        )
        self.register_buffer("eps_in", torch.zeros(in_features))
        self.register_buffer("eps_out", torch.zeros(out_features))
        if bias:
            self.bias_sigma = nn.Parameter(
                torch.full((out_features,), sigma0 / math.sqrt(in_features))
            )
        else:
            self.register_parameter("bias_sigma", None)

    @staticmethod
    def _f(x):
        return x.sign() * x.abs().sqrt()

    def reset_noise(self, generator=None):
        self.eps_in.copy_(self._f(torch.randn(self.in_features, generator=generator)))
        self.eps_out.copy_(self._f(torch.randn(self.out_features, generator=generator)))

    def forward(self, x):
        if not self.training:
            return F.linear(x, self.weight, self.bias)
        w = self.weight + self.weight_sigma * torch.outer(self.eps_out, self.eps_in)
        b = None if self.bias is None else self.bias + self.bias_sigma * self.eps_out
        return F.linear(x, w, b)


class DuelingHead(nn.Module):
    def __init__(self, in_features, n_actions, hidden=256, noisy=True, sigma0=0.5):
        super().__init__()
        Lin = (lambda i, o: NoisyLinear(i, o, sigma0=sigma0)) if noisy else nn.Linear
        self.value = nn.Sequential(Lin(in_features, hidden), nn.ReLU(), Lin(hidden, 1))
        self.advantage = nn.Sequential(Lin(in_features, hidden), nn.ReLU(), Lin(hidden, n_actions))

    def forward(self, z):
        v, a = self.value(z), self.advantage(z)
        return v + a - a.mean(dim=1, keepdim=True)


class AtariQNetwork(nn.Module):
    """Nature-DQN trunk; the frame stack is the channel axis."""

    def __init__(self, n_actions, frame_stack=4, hidden=256, noisy=True, frame_size=44):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv2d(frame_stack, 16, 8, stride=4),
            nn.ReLU(inplace=True),
            nn.Conv2d(16, 32, 4, stride=2),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 32, 3, stride=1),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        with torch.no_grad():
            n_flat = self.trunk(torch.zeros(1, frame_stack, frame_size, frame_size)).shape[1]
        self.head = DuelingHead(n_flat, n_actions, hidden=hidden, noisy=noisy)

    def forward(self, obs):
        return self.head(self.trunk(obs / 255.0))


@heldout(
    "dqn_dueling_noisy",
    lambda: ((rand(2, 4, 44, 44).abs() * 60,), {}),
    edit=("head", {"hidden": 96}),
    train=True,
)
def dqn_dueling_noisy():
    return AtariQNetwork(n_actions=6, hidden=128)


# --------------------------------------------------------------------------- PPO actor-critic


def layer_init(layer, std=math.sqrt(2), bias_const=0.0):  # noqa: B008
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class PPOAgent(nn.Module):
    """CleanRL-style continuous agent with a shared trunk and a state-independent log std."""

    def __init__(self, args: argparse.Namespace):
        super().__init__()
        act = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU}[args.activation]
        layers = []
        last = args.obs_dim
        for width in args.hidden_sizes:
            layers += [layer_init(nn.Linear(last, width)), act()]
            last = width
        self.shared = nn.Sequential(*layers)
        self.actor_mean = layer_init(nn.Linear(last, args.act_dim), std=0.01)
        self.critic = layer_init(nn.Linear(last, 1), std=1.0)
        self.actor_logstd = nn.Parameter(torch.full((1, args.act_dim), args.init_log_std))

    def get_value(self, x):
        return self.critic(self.shared(x))

    def forward(self, x, action=None):
        h = self.shared(x)
        mean = self.actor_mean(h)
        std = self.actor_logstd.expand_as(mean).exp()
        dist = torch.distributions.Normal(mean, std)
        if action is None:
            action = mean
        return action, dist.log_prob(action).sum(1), dist.entropy().sum(1), self.critic(h)


@heldout("ppo_actor_critic", lambda: ((rand(8, 11),), {"action": rand(8, 3, seed=1)}))
def ppo_actor_critic():
    args = argparse.Namespace(
        obs_dim=11, act_dim=3, hidden_sizes=[64, 64], activation="tanh", init_log_std=-0.5
    )
    return PPOAgent(args)


# --------------------------------------------------------------------------- SAC


def mlp(sizes, activation=nn.ReLU, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class MLPQFunction(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes=(256, 256), activation=nn.ReLU):
        super().__init__()
        self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs, act):
        return torch.squeeze(self.q(torch.cat([obs, act], dim=-1)), -1)


class SquashedGaussianMLPActor(nn.Module):
    LOG_STD_MAX = 2
    LOG_STD_MIN = -20

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
        self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.act_limit = act_limit

    def forward(self, obs, deterministic=True):
        h = self.net(obs)
        mu = self.mu_layer(h)
        log_std = torch.clamp(self.log_std_layer(h), self.LOG_STD_MIN, self.LOG_STD_MAX)
        std = torch.exp(log_std)
        pi = mu if deterministic else mu + std * torch.randn_like(mu)
        logp = torch.distributions.Normal(mu, std).log_prob(pi).sum(-1)
        logp = logp - (2 * (math.log(2) - pi - F.softplus(-2 * pi))).sum(-1)
        return self.act_limit * torch.tanh(pi), logp


class MLPActorCritic(nn.Module):
    """SpinningUp's layout: one actor, twin Q functions."""

    def __init__(
        self, obs_dim, act_dim, act_limit=1.0, hidden_sizes=(256, 256), activation=nn.ReLU
    ):
        super().__init__()
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation, act_limit)
        self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
        self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

    def forward(self, obs):
        a, logp = self.pi(obs)
        return torch.min(self.q1(obs, a), self.q2(obs, a)), logp


@heldout("sac_twin_q", lambda: ((rand(5, 17),), {}))
def sac_twin_q():
    return MLPActorCritic(17, 6, act_limit=2.0, hidden_sizes=(128, 128), activation=nn.ELU)


# --------------------------------------------------------------------------- IMPALA CNN


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


class ConvSequence(nn.Module):
    def __init__(self, input_shape, out_channels):
        super().__init__()
        self._input_shape = input_shape
        self._out_channels = out_channels
        self.conv = nn.Conv2d(input_shape[0], out_channels, 3, padding=1)
        self.res_block0 = ResidualBlock(out_channels)
        self.res_block1 = ResidualBlock(out_channels)

    def forward(self, x):
        x = F.max_pool2d(self.conv(x), kernel_size=3, stride=2, padding=1)
        return self.res_block1(self.res_block0(x))

    def get_output_shape(self):
        _c, h, w = self._input_shape
        return (self._out_channels, (h + 1) // 2, (w + 1) // 2)


class ImpalaAgent(nn.Module):
    def __init__(self, obs_shape=(3, 64, 64), n_actions=15, depths=(16, 32, 32), emb=256):
        super().__init__()
        shape = obs_shape
        seqs = []
        for d in depths:
            seq = ConvSequence(shape, d)
            shape = seq.get_output_shape()
            seqs.append(seq)
        self.network = nn.Sequential(
            *seqs, nn.Flatten(), nn.ReLU(), nn.Linear(math.prod(shape), emb), nn.ReLU()
        )
        self.actor = nn.Linear(emb, n_actions)
        self.critic = nn.Linear(emb, 1)

    def forward(self, x):
        h = self.network(x.permute(0, 3, 1, 2) / 255.0)  # gym gives NHWC
        return F.log_softmax(self.actor(h), -1), self.critic(h)


@heldout("impala_cnn", lambda: ((rand(2, 32, 32, 3).abs() * 80,), {}))
def impala_cnn():
    return ImpalaAgent(obs_shape=(3, 32, 32), depths=(8, 16, 16), emb=64)
