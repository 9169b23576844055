"""Constructor habits that read an argument's kind from its use, not its value: a shape tuple
unpacked (``c, h, w = obs_shape``), per-layer lists indexed and measured (``cards[i]``,
``sizes[0]``), widths that are sums of arguments (Bahdanau's ``enc_hid * 2 + dec_hid``) or a
float factor of one (``int(d_model * d_ffn_factor)``) and a lazy input layer chosen when a
width is None; the activations passed as functions are in ``activations.py``."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn, tokens

# --- Atari actor-critic (A2C/PPO): c, h, w = obs_shape, conv output size computed by hand -------


def _conv_out(size, kernel, stride):
    return (size - kernel) // stride + 1


class AtariActorCritic(nn.Module):
    def __init__(self, obs_shape=(4, 84, 84), n_actions=6, hidden=512):
        super().__init__()
        c, h, w = obs_shape
        self.conv1 = nn.Conv2d(c, 32, 8, stride=4)
        self.conv2 = nn.Conv2d(32, 64, 4, stride=2)
        self.conv3 = nn.Conv2d(64, 64, 3, stride=1)
        oh = _conv_out(_conv_out(_conv_out(h, 8, 4), 4, 2), 3, 1)
        ow = _conv_out(_conv_out(_conv_out(w, 8, 4), 4, 2), 3, 1)
        self.fc = nn.Linear(64 * oh * ow, hidden)
        self.actor = nn.Linear(hidden, n_actions)
        self.critic = nn.Linear(hidden, 1)

    def forward(self, obs):
        x = obs / 255.0
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        x = F.relu(self.fc(x.flatten(1)))
        return self.actor(x), self.critic(x)


case(
    "atari_actor_critic",
    lambda: AtariActorCritic((3, 48, 40), n_actions=5, hidden=64),
    args(lambda: randn(2, 3, 48, 40).abs() * 100),
    edit=("critic", {"bias": False}),
    styles="c, h, w = obs_shape unpacked, conv output size computed by hand",
)

# --- A conv encoder zipping per-layer channels and kernels (tuple defaults) ---------------------


class ConvEncoder(nn.Module):
    def __init__(self, in_ch, channels=(32, 64, 64), kernels=(5, 3, 3), emb=128):
        super().__init__()
        layers = []
        prev = in_ch
        for ch, k in zip(channels, kernels):
            layers += [nn.Conv2d(prev, ch, k, padding=k // 2), nn.ReLU()]
            prev = ch
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.proj = nn.Linear(prev, emb)

    def forward(self, x):
        return self.proj(self.pool(self.body(x)).flatten(1))


class SiameseNet(nn.Module):
    """A siamese embedding: the image tower above, a feature tower whose input layer is lazy
    when its width is not given."""

    def __init__(self, in_ch=3, feat_dim=None, emb=32, channels=(8, 16), kernels=(3, 3)):
        super().__init__()
        self.image = ConvEncoder(in_ch, channels, kernels, emb)
        self.feat_in = nn.Linear(feat_dim, emb) if feat_dim is not None else nn.LazyLinear(emb)
        self.feat_out = nn.Linear(emb, emb)

    def embed(self, img, feat):
        return self.image(img) + self.feat_out(torch.relu(self.feat_in(feat)))

    def forward(self, img1, feat1, img2, feat2):
        a, b = self.embed(img1, feat1), self.embed(img2, feat2)
        return F.pairwise_distance(a, b)


def _siamese():
    m = SiameseNet(3, None, emb=16, channels=(8, 12), kernels=(5, 3))
    with torch.no_grad():  # the lazy layer initialised by a first call, as a notebook has it
        m.feat_in(torch.zeros(1, 10))
    return m


case(
    "siamese_lazy_input",
    _siamese,
    args(
        lambda: randn(2, 3, 16, 16),
        lambda: randn(2, 10, seed=1),
        lambda: randn(2, 3, 16, 16, seed=2),
        lambda: randn(2, 10, seed=3),
    ),
    edit=("feat_out", {"bias": False}),
    styles="zip(channels, kernels) with tuple defaults, nn.LazyLinear when a width is None",
)

# --- Tabular tokenizer: per-feature cardinalities, indexed in a range(len(...)) loop ------------


class CategoricalTokenizer(nn.Module):
    def __init__(self, cards, d_token, n_num=0):
        super().__init__()
        self.embeddings = nn.ModuleList()
        for i in range(len(cards)):
            self.embeddings.append(nn.Embedding(cards[i], d_token))
        self.num_weight = nn.Parameter(torch.randn(n_num, d_token) * 0.02)
        self.cls = nn.Parameter(torch.zeros(1, 1, d_token))

    def forward(self, x_cat, x_num):
        cat = torch.stack([e(x_cat[:, i]) for i, e in enumerate(self.embeddings)], 1)
        num = x_num.unsqueeze(-1) * self.num_weight
        cls = self.cls.expand(x_cat.shape[0], -1, -1)
        return torch.cat([cls, cat, num], 1)


class TabularNet(nn.Module):
    def __init__(self, cards, n_num, d_token=16, hidden_sizes=None, n_out=1):
        super().__init__()
        self.tok = CategoricalTokenizer(cards, d_token, n_num)
        n_tokens = 1 + len(cards) + n_num
        self.inp = nn.Linear(n_tokens * d_token, hidden_sizes[0])
        self.hidden = nn.ModuleList(
            [nn.Linear(hidden_sizes[i], hidden_sizes[i + 1]) for i in range(len(hidden_sizes) - 1)]
        )
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(hidden_sizes[-1], n_out)

    def forward(self, x_cat, x_num):
        x = self.tok(x_cat, x_num).flatten(1)
        x = F.relu(self.inp(x))
        for layer in self.hidden:
            x = self.drop(F.relu(layer(x)))
        return self.out(x)


case(
    "tabular_cardinalities",
    lambda: TabularNet([5, 7, 3], n_num=2, d_token=8, hidden_sizes=[32, 24, 16], n_out=2),
    args(lambda: tokens(4, 3, vocab=3), lambda: randn(4, 2)),
    edit=("drop", {"p": 0.2}),
    styles="cards[i] in a range(len(cards)) loop, hidden_sizes[0] and [i + 1] indexed",
)

# --- TextCNN (Kim 2014): filter sizes and filter counts per layer, indexed ----------------------


class TextCNN(nn.Module):
    def __init__(self, vocab_size, emb_dim, n_filters, filter_sizes, n_classes, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim)
        self.convs = nn.ModuleList(
            [
                nn.Conv2d(1, n_filters[i], (filter_sizes[i], emb_dim))
                for i in range(len(filter_sizes))
            ]
        )
        self.fc = nn.Linear(sum(n_filters), n_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text):
        x = self.embedding(text).unsqueeze(1)
        pooled = [F.relu(c(x)).squeeze(3).amax(2) for c in self.convs]
        return self.fc(self.dropout(torch.cat(pooled, 1)))


case(
    "textcnn_filter_lists",
    lambda: TextCNN(60, 12, [6, 8, 10], [2, 3, 4], n_classes=3, dropout=0.3),
    args(lambda: tokens(2, 9, vocab=60)),
    edit=("dropout", {"p": 0.2}),
    styles="n_filters[i] and filter_sizes[i] in range(len(...)), sum(n_filters)",
)

# --- FT-Transformer block (Gorishniy et al.): d_ffn = int(d_model * d_ffn_factor), ReGLU ---------


class ReGLU(nn.Module):
    def forward(self, x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)


class FTBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ffn_factor=4 / 3, attn_dropout=0.2, ffn_dropout=0.1):
        super().__init__()
        d_ffn = int(d_model * d_ffn_factor)
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, dropout=attn_dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.ffn_in = nn.Linear(d_model, d_ffn * 2)
        self.act = ReGLU()
        self.ffn_drop = nn.Dropout(ffn_dropout)
        self.ffn_out = nn.Linear(d_ffn, d_model)

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ffn_out(self.ffn_drop(self.act(self.ffn_in(self.norm2(x)))))


class FTTransformer(nn.Module):
    def __init__(self, n_features, d_model=24, n_blocks=2, n_heads=4, d_ffn_factor=4 / 3, n_out=1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_features, d_model) * 0.1)
        self.bias = nn.Parameter(torch.zeros(n_features, d_model))
        self.blocks = nn.ModuleList(
            [FTBlock(d_model, n_heads, d_ffn_factor) for _ in range(n_blocks)]
        )
        self.head = nn.Sequential(nn.LayerNorm(d_model), nn.ReLU(), nn.Linear(d_model, n_out))

    def forward(self, x):
        t = x.unsqueeze(-1) * self.weight + self.bias
        for b in self.blocks:
            t = b(t)
        return self.head(t.mean(1))


case(
    "ft_transformer_factor",
    lambda: FTTransformer(5, d_model=32, n_blocks=2, n_heads=4, d_ffn_factor=1.7, n_out=2),
    args(lambda: randn(3, 5)),
    edit=("blocks.0.ffn_drop", {"p": 0.2}),
    styles="d_ffn = int(d_model * d_ffn_factor) with a float factor (1.7; 4/3 by default)",
)

# --- A DQN head with an obs shape that has no default (c, h, w = obs_shape) and a lazy head -----


class ConvDQN(nn.Module):
    def __init__(self, obs_shape, n_actions, feat_dim=None, hidden_sizes=None):
        super().__init__()
        c, h, w = obs_shape
        self.conv = nn.Sequential(nn.Conv2d(c, 16, 3, stride=2), nn.ReLU(), nn.Flatten())
        self.fc = (
            nn.Linear(feat_dim, hidden_sizes[0]) if feat_dim else nn.LazyLinear(hidden_sizes[0])
        )
        self.hidden = nn.ModuleList(
            [nn.Linear(hidden_sizes[i - 1], hidden_sizes[i]) for i in range(1, len(hidden_sizes))]
        )
        self.q = nn.Linear(hidden_sizes[-1], n_actions)

    def forward(self, obs):
        x = F.relu(self.fc(self.conv(obs)))
        for layer in self.hidden:
            x = F.relu(layer(x))
        return self.q(x)


def _dqn():
    m = ConvDQN((2, 9, 9), 4, hidden_sizes=[24, 16])
    with torch.no_grad():  # the lazy layer set up by a first call
        m(torch.zeros(1, 2, 9, 9))
    return m


case(
    "conv_dqn_lazy_obs_shape",
    _dqn,
    args(lambda: randn(2, 2, 9, 9)),
    edit=("q", {"bias": False}),
    styles="c, h, w = obs_shape with no default, hidden_sizes[i - 1] indexed, LazyLinear when feat_dim is None",
)
