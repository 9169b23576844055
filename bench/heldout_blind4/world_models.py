"""Model-based and sequence-model RL: a Dreamer-style RSSM world model and a Decision Transformer.

A dataclass config whose embedding size the encoder fills in, convs added with ``add_module`` in a
loop, a GRU cell rolled over time with prior and posterior heads, and GPT blocks with a causal
mask buffer over interleaved return, state and action tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

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
