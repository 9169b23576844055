"""Constructor habits that hide an argument behind a lookup or a local name: an activation given
as a string and looked up on a module (``getattr(F, act)``, ``getattr(nn, name)()``), a small
function written inside ``__init__`` that makes each stack, a module-level helper that picks its
last activation by a conditional, a first width that is the sum of two arguments at the head of
a list of sizes, a tuple of names that chooses which projections are adapted (handed down in a
config dataclass), and a torch layer subclassed with extra keywords handed to its base."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn, tokens

# --- Activations named by strings, looked up on a module --------------------------------------


class NamedActMLP(nn.Module):
    def __init__(self, widths, act="relu", out_act="Identity"):
        super().__init__()
        self.act_fn = getattr(F, act)
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.head_act = getattr(nn, out_act)()

    def forward(self, x):
        for fc in self.fcs[:-1]:
            x = self.act_fn(fc(x))
        return self.head_act(self.fcs[-1](x))


case(
    "named_act_mlp",
    lambda: NamedActMLP([12, 24, 24, 4], act="silu", out_act="Tanh"),
    args(lambda: randn(3, 12)),
    edit=("fcs.1", {"bias": False}),
    styles="an activation function and a layer class looked up by name with getattr",
)

# --- A stack made by a function written inside __init__ ---------------------------------------


class TwoHeads(nn.Module):
    def __init__(self, d, hidden=32, depth=2, mean_norm="none", scale_norm="layer"):
        super().__init__()
        norms = {"none": nn.Identity, "layer": nn.LayerNorm, "batch": nn.BatchNorm1d}

        def stack(norm):
            layers = [nn.Linear(d, hidden), norms[norm](hidden), nn.GELU()]
            for _ in range(depth - 1):
                layers += [nn.Linear(hidden, hidden), nn.GELU()]
            return nn.Sequential(*layers, nn.Linear(hidden, d))

        self.mean = stack(mean_norm)
        self.scale = stack(norm=scale_norm)

    def forward(self, x):
        return self.mean(x), torch.exp(self.scale(x))


case(
    "two_heads_local_stack",
    lambda: TwoHeads(6, hidden=20, mean_norm="batch", scale_norm="none"),
    args(lambda: randn(4, 6)),
    edit=("mean.0", {"bias": False}),
    styles="a function defined inside __init__ makes each stack from a name looked up in a table",
)

# --- A module-level helper that picks its activation by a conditional --------------------------


def stack(widths, act=nn.Tanh, last=nn.Identity):
    layers = []
    for i in range(len(widths) - 1):
        make = act if i < len(widths) - 2 else last
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        layers.append(make())
    return nn.Sequential(*layers)


class GoalPolicy(nn.Module):
    def __init__(self, state_dim, n_actions, hidden, act):
        super().__init__()
        self.body = stack([state_dim] + list(hidden), act, act)
        self.logits = nn.Linear(hidden[-1], n_actions)

    def forward(self, s):
        return self.logits(self.body(s))


class GoalCritic(nn.Module):
    def __init__(self, state_dim, goal_dim, hidden=(64, 64), act=nn.Tanh):
        super().__init__()
        self.v = stack([state_dim + goal_dim] + list(hidden) + [1], act)

    def forward(self, s, g):
        return self.v(torch.cat([s, g], -1)).squeeze(-1)


class GoalAgent(nn.Module):
    def __init__(self, state_dim, goal_dim, n_actions, hidden=(64, 64), act=nn.Tanh):
        super().__init__()
        self.policy = GoalPolicy(state_dim + goal_dim, n_actions, hidden, act)
        self.critic = GoalCritic(state_dim, goal_dim, hidden, act)

    def forward(self, s, g):
        return self.policy(torch.cat([s, g], -1)), self.critic(s, g)


case(
    "goal_agent_helper_stack",
    lambda: GoalAgent(9, 3, 4, hidden=(40, 40), act=nn.SiLU),
    args(lambda: randn(5, 9), lambda: randn(5, 3, seed=1)),
    edit=("policy.logits", {"bias": False}),
    styles="a layer class handed to a helper that picks it by a conditional, a sum of two "
    "arguments heading a list of sizes",
)

# --- Adapted projections chosen by names, in a config handed down ------------------------------


class Adapted(nn.Linear):
    def __init__(self, d_in, d_out, rank=2, scale=1.0, **kw):
        super().__init__(d_in, d_out, **kw)
        self.rank, self.scale = rank, scale
        self.down = nn.Parameter(torch.zeros(rank, d_in))
        self.up = nn.Parameter(torch.randn(d_out, rank) * 0.02)

    def forward(self, x):
        return super().forward(x) + self.scale * (x @ self.down.t() @ self.up.t())


@dataclass
class AdaptCfg:
    rank: int = 2
    scale: float = 1.0
    adapt: tuple = ("query",)


class AdaptedAttention(nn.Module):
    def __init__(self, d, heads, cfg: AdaptCfg):
        super().__init__()
        self.heads = heads
        for name in ("query", "key", "value", "out"):
            if name in cfg.adapt:
                layer = Adapted(d, d, rank=cfg.rank, scale=cfg.scale)
            else:
                layer = nn.Linear(d, d)
            setattr(self, name, layer)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (getattr(self, n)(x).view(b, t, self.heads, -1).transpose(1, 2) for n in
                   ("query", "key", "value"))  # fmt: skip
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class TaggedEmbedding(nn.Embedding):
    def __init__(self, n, d, tag_scale=1.0, **kwargs):
        super().__init__(n, d, **kwargs)
        self.tag_scale = tag_scale


class AdaptedEncoder(nn.Module):
    def __init__(self, vocab, d=32, heads=4, cfg: AdaptCfg | None = None):
        super().__init__()
        cfg = cfg or AdaptCfg()
        self.emb = TaggedEmbedding(vocab, d, tag_scale=0.5, padding_idx=1, max_norm=2.0)
        self.attn = AdaptedAttention(d, heads, cfg)
        self.norm = nn.LayerNorm(d)

    def forward(self, ids):
        x = self.emb(ids)
        return self.norm(x + self.attn(x))


case(
    "adapted_encoder_names",
    lambda: AdaptedEncoder(60, cfg=AdaptCfg(rank=3, scale=0.5, adapt=("query", "value", "out"))),
    args(lambda: tokens(2, 7, vocab=60)),
    edit=("norm", {"eps": 1e-6}),
    styles="a tuple of names in a config dataclass chooses which projections are adapted; "
    "keywords handed to a torch base's __init__",
)
