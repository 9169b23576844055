"""Reinforcement learning and miscellany: an actor-critic with a shared trunk, a dueling DQN
with noisy linear layers, a ConvLSTM forecaster, a routing network and a tabular
feature-tokenizer transformer."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# A2C/PPO-style actor-critic for pixel observations (Nature-CNN trunk, orthogonal init).


def layer_init(layer, std=None, bias_const=0.0):
    std = math.sqrt(2) if std is None else std
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class NatureCNN(nn.Module):
    def __init__(self, obs_shape, features_dim=64, channels=(16, 32, 32)):
        super().__init__()
        c, h, w = obs_shape
        kernels, strides = (8, 4, 3), (4, 2, 1)
        layers, cin = [], c
        for cout, k, s in zip(channels, kernels, strides):
            layers += [layer_init(nn.Conv2d(cin, cout, k, s)), nn.ReLU()]
            cin = cout
        layers.append(nn.Flatten())
        self.cnn = nn.Sequential(*layers)
        with torch.no_grad():
            n_flat = self.cnn(torch.zeros(1, c, h, w)).shape[1]
        self.linear = nn.Sequential(layer_init(nn.Linear(n_flat, features_dim)), nn.ReLU())

    def forward(self, obs):
        return self.linear(self.cnn(obs / 255.0))


class ActorCritic(nn.Module):
    def __init__(self, obs_shape, n_actions, features_dim=64, continuous=False, log_std_init=0.0):
        super().__init__()
        self.trunk = NatureCNN(obs_shape, features_dim)
        self.heads = nn.ModuleDict(
            {
                "actor": layer_init(nn.Linear(features_dim, n_actions), std=0.01),
                "critic": layer_init(nn.Linear(features_dim, 1), std=1.0),
            }
        )
        self.continuous = continuous
        if continuous:
            self.log_std = nn.Parameter(torch.ones(n_actions) * log_std_init)

    def forward(self, obs, action=None):
        f = self.trunk(obs)
        out = self.heads["actor"](f)
        if self.continuous:
            dist = torch.distributions.Normal(out, self.log_std.exp())
        else:
            dist = torch.distributions.Categorical(logits=out)
        if action is None:
            action = dist.mode if self.continuous else out.argmax(-1)
        log_prob = dist.log_prob(action)
        if self.continuous:
            log_prob = log_prob.sum(-1)
        return {
            "action": action,
            "log_prob": log_prob,
            "entropy": dist.entropy(),
            "value": self.heads["critic"](f).squeeze(-1),
        }


@heldout("actor_critic_atari", lambda: ((rand(2, 4, 44, 44, seed=40).abs() * 100,), {}))
def actor_critic_atari():
    return ActorCritic((4, 44, 44), n_actions=6)


# --------------------------------------------------------------------------------------------
# Dueling DQN (Wang et al. 2016) with factorised NoisyNet layers (Fortunato et al. 2018).


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, std_init=0.5):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.std_init = std_init
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer("weight_epsilon", torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("bias_epsilon", torch.empty(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self):
        mu_range = 1 / math.sqrt(self.in_features)
        self.weight_mu.data.uniform_(-mu_range, mu_range)
        self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
        self.bias_mu.data.uniform_(-mu_range, mu_range)
        self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

    @staticmethod
    def _scale_noise(size):
        x = torch.randn(size)
        return x.sign().mul_(x.abs().sqrt_())

    def reset_noise(self):
        epsilon_in = self._scale_noise(self.in_features)
        epsilon_out = self._scale_noise(self.out_features)
        self.weight_epsilon.copy_(epsilon_out.outer(epsilon_in))
        self.bias_epsilon.copy_(epsilon_out)

    def forward(self, x):
        if self.training:
            return F.linear(
                x,
                self.weight_mu + self.weight_sigma * self.weight_epsilon,
                self.bias_mu + self.bias_sigma * self.bias_epsilon,
            )
        return F.linear(x, self.weight_mu, self.bias_mu)


class DuelingNoisyDQN(nn.Module):
    def __init__(self, state_dim, action_dim, hidden=(64, 32), atoms=1, noisy_std=0.5):
        super().__init__()
        self.action_dim, self.atoms = action_dim, atoms
        self.feature = nn.Sequential(nn.Linear(state_dim, hidden[0]), nn.ReLU())
        self.fc_h_v = NoisyLinear(hidden[0], hidden[1], std_init=noisy_std)
        self.fc_h_a = NoisyLinear(hidden[0], hidden[1], std_init=noisy_std)
        self.fc_z_v = NoisyLinear(hidden[1], atoms, std_init=noisy_std)
        self.fc_z_a = NoisyLinear(hidden[1], action_dim * atoms, std_init=noisy_std)

    def forward(self, x):
        x = self.feature(x)
        v = self.fc_z_v(F.relu(self.fc_h_v(x))).view(-1, 1, self.atoms)
        a = self.fc_z_a(F.relu(self.fc_h_a(x))).view(-1, self.action_dim, self.atoms)
        q = v + a - a.mean(1, keepdim=True)
        return q.softmax(-1) if self.atoms > 1 else q.squeeze(-1)

    def reset_noise(self):
        for name, module in self.named_children():
            if "fc" in name:
                module.reset_noise()


@heldout("dueling_noisy_dqn", lambda: ((rand(4, 8, seed=41),), {}))
def dueling_noisy_dqn():
    torch.manual_seed(0)
    return DuelingNoisyDQN(8, 4, atoms=5)


# --------------------------------------------------------------------------------------------
# ConvLSTM (Shi et al. 2015) encoder for next-frame prediction; cells stacked in a ModuleList.


class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, bias=True):
        super().__init__()
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.kernel_size = kernel_size
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.conv = nn.Conv2d(
            in_channels=self.input_dim + self.hidden_dim,
            out_channels=4 * self.hidden_dim,
            kernel_size=self.kernel_size,
            padding=self.padding,
            bias=bias,
        )

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined_conv = self.conv(torch.cat([input_tensor, h_cur], dim=1))
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i, f, o = torch.sigmoid(cc_i), torch.sigmoid(cc_f), torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        return o * torch.tanh(c_next), c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        z = torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device)
        return z, z.clone()


class ConvLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, num_layers, batch_first=True,
                 return_all_layers=False):  # fmt: skip
        super().__init__()
        if not isinstance(kernel_size, list):
            kernel_size = [kernel_size] * num_layers
        if not isinstance(hidden_dim, list):
            hidden_dim = [hidden_dim] * num_layers
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.batch_first = batch_first
        self.return_all_layers = return_all_layers
        self.cell_list = nn.ModuleList(
            ConvLSTMCell(input_dim if i == 0 else hidden_dim[i - 1], hidden_dim[i], kernel_size[i])
            for i in range(num_layers)
        )

    def forward(self, input_tensor):
        if not self.batch_first:
            input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
        b, seq_len, _, h, w = input_tensor.size()
        layer_output_list, last_state_list = [], []
        cur_layer_input = input_tensor
        for cell in self.cell_list:
            hc = cell.init_hidden(b, (h, w))
            output_inner = []
            for t in range(seq_len):
                hc = cell(cur_layer_input[:, t], hc)
                output_inner.append(hc[0])
            cur_layer_input = torch.stack(output_inner, dim=1)
            layer_output_list.append(cur_layer_input)
            last_state_list.append(hc)
        if not self.return_all_layers:
            return layer_output_list[-1:], last_state_list[-1:]
        return layer_output_list, last_state_list


class NextFramePredictor(nn.Module):
    def __init__(self, channels=1, hidden=(8, 16), kernel=(3, 3)):
        super().__init__()
        self.convlstm = ConvLSTM(channels, list(hidden), kernel, len(hidden))
        self.head = nn.Conv2d(hidden[-1], channels, 1)

    def forward(self, frames):
        outputs, _ = self.convlstm(frames)
        return torch.sigmoid(self.head(outputs[-1][:, -1]))


@heldout("convlstm_nextframe", lambda: ((rand(2, 4, 1, 12, 12, seed=42),), {}))
def convlstm_nextframe():
    return NextFramePredictor()


# --------------------------------------------------------------------------------------------
# A routing network (Rosenbaum et al. 2018 flavour, soft): at every depth a router mixes a pool
# of function blocks; the pool is shared across depths, per-depth routers are separate.


class FunctionBlock(nn.Module):
    def __init__(self, dim, kind="mlp"):
        super().__init__()
        if kind == "mlp":
            self.f = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, dim))
        elif kind == "gated":
            self.f = nn.GLU(-1)
            self.pre = nn.Linear(dim, 2 * dim)
        else:
            raise ValueError(kind)
        self.kind = kind

    def forward(self, x):
        return self.f(self.pre(x)) if self.kind == "gated" else self.f(x)


class SoftRouter(nn.Module):
    def __init__(self, dim, n_choices, n_tasks, temperature=1.0):
        super().__init__()
        self.task_embed = nn.Embedding(n_tasks, dim)
        self.score = nn.Linear(2 * dim, n_choices)
        self.temperature = temperature

    def forward(self, x, task):
        return F.softmax(
            self.score(torch.cat([x, self.task_embed(task)], -1)) / self.temperature, -1
        )


class RoutingNetwork(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["dim"]
        self.inp = nn.Linear(cfg["in_dim"], d)
        self.pool = nn.ModuleDict(
            {name: FunctionBlock(d, kind) for name, kind in cfg["pool"].items()}
        )
        self.routers = nn.ModuleList(
            SoftRouter(d, len(cfg["pool"]), cfg["n_tasks"], cfg.get("temperature", 1.0))
            for _ in range(cfg["depth"])
        )
        self.norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, cfg["out_dim"])

    def forward(self, x, task):
        h = self.inp(x)
        routes = []
        for router in self.routers:
            p = router(h, task)
            ys = torch.stack([blk(h) for blk in self.pool.values()], -1)
            h = self.norm(h + (ys * p.unsqueeze(1)).sum(-1))
            routes.append(p)
        return self.out(h), torch.stack(routes, 1)


def _routing_inputs():
    task = torch.tensor([0, 2, 1, 2])
    return (rand(4, 10, seed=43), task), {}


@heldout("routing_net", _routing_inputs)
def routing_net():
    cfg = {
        "in_dim": 10,
        "dim": 24,
        "out_dim": 3,
        "n_tasks": 3,
        "depth": 3,
        "pool": {"mlp_a": "mlp", "mlp_b": "mlp", "glu": "gated"},
        "temperature": 0.5,
    }
    return RoutingNetwork(cfg)


# --------------------------------------------------------------------------------------------
# FT-Transformer (Gorishniy et al. 2021): numerical and categorical feature tokenizers with raw
# parameters, a [CLS] token, pre-norm blocks with ReGLU, config as a SimpleNamespace.


class FeatureTokenizer(nn.Module):
    def __init__(self, n_num_features, cat_cardinalities, d_token, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_num_features + 1, d_token))
        self.bias = nn.Parameter(torch.empty(n_num_features, d_token)) if bias else None
        offsets = torch.tensor([0] + list(cat_cardinalities[:-1])).cumsum(0)
        self.register_buffer("category_offsets", offsets)
        self.category_embeddings = nn.Embedding(sum(cat_cardinalities), d_token)
        self.cat_bias = nn.Parameter(torch.empty(len(cat_cardinalities), d_token))
        for p in (self.weight, self.bias, self.cat_bias):
            if p is not None:
                nn.init.kaiming_uniform_(p, a=math.sqrt(5))

    def forward(self, x_num, x_cat):
        x_num = torch.cat([torch.ones(len(x_num), 1, device=x_num.device), x_num], 1)
        x = self.weight[None] * x_num[:, :, None]
        if self.bias is not None:
            bias = torch.cat([torch.zeros(1, self.bias.shape[1]), self.bias])
            x = x + bias[None]
        x_cat = self.category_embeddings(x_cat + self.category_offsets[None]) + self.cat_bias[None]
        return torch.cat([x, x_cat], 1)


class ReGLU(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)


class FTBlock(nn.Module):
    def __init__(self, d_token, n_heads, d_ffn_factor, attention_dropout, ffn_dropout,
                 prenormalization=True, first=False):  # fmt: skip
        super().__init__()
        d_hidden = int(d_token * d_ffn_factor)
        self.attention = nn.MultiheadAttention(
            d_token, n_heads, attention_dropout, batch_first=True
        )
        self.linear0 = nn.Linear(d_token, d_hidden * 2)
        self.activation = ReGLU()
        self.linear1 = nn.Linear(d_hidden, d_token)
        self.norm1 = nn.LayerNorm(d_token)
        self.norm0 = nn.Identity() if (first and prenormalization) else nn.LayerNorm(d_token)
        self.ffn_dropout = nn.Dropout(ffn_dropout)
        self.prenormalization = prenormalization

    def forward(self, x):
        h = self.norm0(x) if self.prenormalization else x
        x = x + self.attention(h, h, h, need_weights=False)[0]
        if not self.prenormalization:
            x = self.norm0(x)
        h = self.norm1(x) if self.prenormalization else x
        x = x + self.linear1(self.ffn_dropout(self.activation(self.linear0(h))))
        return x if self.prenormalization else self.norm1(x)


class FTTransformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tokenizer = FeatureTokenizer(cfg.n_num, cfg.cat_cardinalities, cfg.d_token)
        self.blocks = nn.ModuleList(
            FTBlock(cfg.d_token, cfg.n_heads, cfg.d_ffn_factor, cfg.attention_dropout,
                    cfg.ffn_dropout, first=(i == 0))
            for i in range(cfg.n_layers)
        )  # fmt: skip
        self.last_norm = nn.LayerNorm(cfg.d_token)
        self.head = nn.Linear(cfg.d_token, cfg.d_out)

    def forward(self, x_num, x_cat):
        x = self.tokenizer(x_num, x_cat)
        for block in self.blocks:
            x = block(x)
        return self.head(F.relu(self.last_norm(x[:, 0])))


def _ft_inputs():
    g = torch.Generator().manual_seed(44)
    x_cat = torch.stack([torch.randint(0, c, (4,), generator=g) for c in (3, 5, 2)], 1)
    return (rand(4, 6, seed=45), x_cat), {}


@heldout("ft_transformer", _ft_inputs)
def ft_transformer():
    cfg = SimpleNamespace(
        n_num=6,
        cat_cardinalities=[3, 5, 2],
        d_token=32,
        n_heads=4,
        n_layers=2,
        d_ffn_factor=4 / 3,
        attention_dropout=0.2,
        ffn_dropout=0.1,
        d_out=1,
    )
    return FTTransformer(cfg)
