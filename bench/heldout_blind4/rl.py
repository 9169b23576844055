"""Reinforcement learning: value heads, actor-critics, a world model and a sequence policy.

Written the way RL repos tend to be: Atari-style conv trunks, noisy layers that keep their noise
in buffers, argparse namespaces passed straight into the networks, twin critics, a Dreamer-ish
recurrent state-space model and a Decision Transformer with its own GPT blocks.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

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


# --------------------------------------------------------------------------- Dreamer RSSM


@dataclass
class WMConfig:
    image_channels: int = 3
    depth: int = 8
    deter: int = 64
    stoch: int = 16
    hidden: int = 64
    embed: int = 0  # filled in by the encoder
    n_actions: int = 4
    min_std: float = 0.1


class ConvEncoder(nn.Module):
    def __init__(self, in_ch=3, depth=32, act=nn.ELU):
        super().__init__()
        chans = [in_ch] + [depth * 2**i for i in range(4)]
        self.convs = nn.Sequential()
        for i in range(4):
            self.convs.add_module(f"conv{i}", nn.Conv2d(chans[i], chans[i + 1], 4, stride=2))
            self.convs.add_module(f"act{i}", act())
        self.out_dim = chans[-1] * 2 * 2  # 64x64 input

    def forward(self, obs):  # (B, T, C, H, W)
        b, t = obs.shape[:2]
        return self.convs(obs.flatten(0, 1)).reshape(b, t, -1)


class RSSM(nn.Module):
    def __init__(self, cfg: WMConfig):
        super().__init__()
        self.cfg = cfg
        self.img_in = nn.Sequential(nn.Linear(cfg.stoch + cfg.n_actions, cfg.hidden), nn.ELU())
        self.cell = nn.GRUCell(cfg.hidden, cfg.deter)
        self.img_out = nn.Sequential(
            nn.Linear(cfg.deter, cfg.hidden), nn.ELU(), nn.Linear(cfg.hidden, 2 * cfg.stoch)
        )
        self.obs_out = nn.Sequential(
            nn.Linear(cfg.deter + cfg.embed, cfg.hidden),
            nn.ELU(),
            nn.Linear(cfg.hidden, 2 * cfg.stoch),
        )

    def _stats(self, x):
        mean, std = x.chunk(2, -1)
        return mean, F.softplus(std) + self.cfg.min_std

    def observe(self, embed, actions):
        b, t = actions.shape[:2]
        deter = embed.new_zeros(b, self.cfg.deter)
        stoch = embed.new_zeros(b, self.cfg.stoch)
        feats, kls = [], []
        for i in range(t):
            deter = self.cell(self.img_in(torch.cat([stoch, actions[:, i]], -1)), deter)
            p_mean, p_std = self._stats(self.img_out(deter))
            q_mean, q_std = self._stats(self.obs_out(torch.cat([deter, embed[:, i]], -1)))
            stoch = q_mean  # use the mode so the forward is deterministic
            kl = (
                torch.log(p_std / q_std)
                + (q_std**2 + (q_mean - p_mean) ** 2) / (2 * p_std**2)
                - 0.5
            )
            kls.append(kl.sum(-1))
            feats.append(torch.cat([deter, stoch], -1))
        return torch.stack(feats, 1), torch.stack(kls, 1)


class ConvDecoder(nn.Module):
    def __init__(self, feat_dim, depth=32, out_ch=3):
        super().__init__()
        self.depth = depth
        self.fc = nn.Linear(feat_dim, 32 * depth)
        kernels, chans = [5, 5, 6, 6], [32 * depth, 4 * depth, 2 * depth, depth, out_ch]
        mods = []
        for i, k in enumerate(kernels):
            mods.append(nn.ConvTranspose2d(chans[i], chans[i + 1], k, stride=2))
            if i < len(kernels) - 1:
                mods.append(nn.ELU())
        self.deconvs = nn.Sequential(*mods)

    def forward(self, feat):
        b, t = feat.shape[:2]
        x = self.fc(feat.flatten(0, 1)).reshape(b * t, 32 * self.depth, 1, 1)
        return self.deconvs(x).reshape(b, t, -1, 64, 64)


class WorldModel(nn.Module):
    def __init__(self, cfg: WMConfig):
        super().__init__()
        self.encoder = ConvEncoder(cfg.image_channels, cfg.depth)
        cfg.embed = self.encoder.out_dim
        self.rssm = RSSM(cfg)
        feat = cfg.deter + cfg.stoch
        self.decoder = ConvDecoder(feat, cfg.depth, cfg.image_channels)
        self.reward = nn.Sequential(nn.Linear(feat, cfg.hidden), nn.ELU(), nn.Linear(cfg.hidden, 1))

    def forward(self, obs, actions):
        feats, kl = self.rssm.observe(self.encoder(obs), actions)
        return self.decoder(feats), self.reward(feats).squeeze(-1), kl


@heldout("dreamer_rssm", lambda: ((rand(2, 3, 3, 64, 64), rand(2, 3, 4, seed=1).softmax(-1)), {}))
def dreamer_rssm():
    return WorldModel(WMConfig())


# --------------------------------------------------------------------------- Decision Transformer


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, attn_pdrop=0.1, resid_pdrop=0.1):
        super().__init__()
        assert n_embd % n_head == 0
        self.key = nn.Linear(n_embd, n_embd)
        self.query = nn.Linear(n_embd, n_embd)
        self.value = nn.Linear(n_embd, n_embd)
        self.attn_drop = nn.Dropout(attn_pdrop)
        self.resid_drop = nn.Dropout(resid_pdrop)
        self.proj = nn.Linear(n_embd, n_embd)
        self.register_buffer(
            "mask",
            torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size),
        )
        self.n_head = n_head

    def forward(self, x):
        B, T, C = x.size()
        k = self.key(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = self.query(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.value(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, pdrop=0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, pdrop, pdrop)
        self.mlp = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.GELU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(pdrop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class DecisionTransformer(nn.Module):
    def __init__(
        self,
        state_dim,
        act_dim,
        n_embd=64,
        n_layer=2,
        n_head=4,
        max_length=10,
        max_ep_len=200,
        pdrop=0.1,
    ):
        super().__init__()
        self.act_dim = act_dim
        self.embed_timestep = nn.Embedding(max_ep_len, n_embd)
        self.embed_return = nn.Linear(1, n_embd)
        self.embed_state = nn.Linear(state_dim, n_embd)
        self.embed_action = nn.Linear(act_dim, n_embd)
        self.embed_ln = nn.LayerNorm(n_embd)
        self.blocks = nn.Sequential(
            *[Block(n_embd, n_head, 3 * max_length, pdrop) for _ in range(n_layer)]
        )
        self.predict_action = nn.Sequential(nn.Linear(n_embd, act_dim), nn.Tanh())
        self.predict_return = nn.Linear(n_embd, 1)

    def forward(self, states, actions, returns_to_go, timesteps):
        B, T = states.shape[:2]
        t = self.embed_timestep(timesteps)
        s, a, r = (
            self.embed_state(states) + t,
            self.embed_action(actions) + t,
            self.embed_return(returns_to_go) + t,
        )
        h = torch.stack((r, s, a), dim=1).permute(0, 2, 1, 3).reshape(B, 3 * T, -1)
        h = self.blocks(self.embed_ln(h)).reshape(B, T, 3, -1).permute(0, 2, 1, 3)
        return self.predict_action(h[:, 1]), self.predict_return(h[:, 2])


@heldout(
    "decision_transformer",
    lambda: (
        (
            rand(2, 6, 11),
            rand(2, 6, 3, seed=1).tanh(),
            rand(2, 6, 1, seed=2),
            torch.arange(6).repeat(2, 1),
        ),
        {},
    ),
    edit=("blocks.1.attn", {"n_head": 2}),
)
def decision_transformer():
    return DecisionTransformer(11, 3, max_length=6)


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
