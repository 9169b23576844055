"""Language models and text classifiers: RetNet, RWKV, an ALiBi GPT, a tied LSTM LM, a text CNN.

Retention with per-head decay buffers, RWKV's time-mix with raw decay and mixing parameters and a
recurrent WKV loop, GPT blocks with ALiBi slopes instead of positions and a tied output head,
the PyTorch-examples RNN language model chosen by a string, and Kim's CNN from argparse options.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout


def tokens(b, t, vocab, seed=0):
    return torch.randint(0, vocab, (b, t), generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------- RetNet


class MultiScaleRetention(nn.Module):
    """Parallel form of retention: (Q K^T ⊙ D) V, with one decay gamma per head and GroupNorm."""

    def __init__(self, hidden_size, heads, double_v_dim=False):
        super().__init__()
        self.hidden_size = hidden_size
        self.v_dim = hidden_size * 2 if double_v_dim else hidden_size
        self.heads = heads
        assert hidden_size % heads == 0, "hidden_size must be divisible by heads"
        self.head_size = hidden_size // heads
        self.head_v_dim = self.v_dim // heads
        gammas = 1 - torch.exp(torch.linspace(math.log(1 / 32), math.log(1 / 512), heads))
        self.register_buffer("gammas", gammas)
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, self.v_dim, bias=False)
        self.g_proj = nn.Linear(hidden_size, self.v_dim, bias=False)
        self.out_proj = nn.Linear(self.v_dim, hidden_size, bias=False)
        self.swish = nn.SiLU()
        self.group_norm = nn.GroupNorm(heads, self.v_dim)
        theta = 10000 ** (-torch.arange(0, self.head_size, 2).float() / self.head_size)
        self.register_buffer("theta", theta, persistent=False)

    def _rotate(self, x):
        T = x.shape[2]
        ang = torch.arange(T, device=x.device)[:, None] * self.theta[None]
        cos, sin = ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)
        x2 = torch.stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2)
        return x * cos + x2 * sin

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.heads, self.head_size).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.heads, self.head_size).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.heads, self.head_v_dim).transpose(1, 2)
        q, k = self._rotate(q), self._rotate(k) / math.sqrt(self.head_size)
        n = torch.arange(T, device=x.device)
        diff = (n[:, None] - n[None, :]).float()
        D = (self.gammas.view(-1, 1, 1) ** diff) * (diff >= 0)
        D = D / D.sum(-1, keepdim=True).sqrt()
        ret = (q @ k.transpose(-1, -2)) * D
        y = (ret @ v).transpose(1, 2).reshape(B * T, self.v_dim)
        y = self.group_norm(y).view(B, T, self.v_dim)
        return self.out_proj(self.swish(self.g_proj(x)) * y)


class RetNetLayer(nn.Module):
    def __init__(self, hidden_size, ffn_size, heads, double_v_dim=False, dropout=0.0):
        super().__init__()
        self.retention = MultiScaleRetention(hidden_size, heads, double_v_dim)
        self.ffn = nn.Sequential(
            nn.Linear(hidden_size, ffn_size), nn.GELU(), nn.Linear(ffn_size, hidden_size)
        )
        self.ln1 = nn.LayerNorm(hidden_size)
        self.ln2 = nn.LayerNorm(hidden_size)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.retention(self.ln1(x)))
        return x + self.drop(self.ffn(self.ln2(x)))


class RetNetLM(nn.Module):
    def __init__(self, vocab_size, layers, hidden_dim, ffn_size, heads, double_v_dim=False):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_dim)
        self.layers = nn.ModuleList(
            [RetNetLayer(hidden_dim, ffn_size, heads, double_v_dim) for _ in range(layers)]
        )
        self.ln_f = nn.LayerNorm(hidden_dim)
        self.lm_head = nn.Linear(hidden_dim, vocab_size, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.ln_f(x))


@heldout(
    "retnet_lm",
    lambda: ((tokens(2, 16, 200),), {}),
    edit=("layers.1.retention", {"heads": 2}),
)
def retnet_lm():
    return RetNetLM(200, layers=2, hidden_dim=64, ffn_size=128, heads=4, double_v_dim=True)


# --------------------------------------------------------------------------- RWKV (v4)


class RWKV_TimeMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.layer_id = layer_id
        n_embd, attn_sz = config.n_embd, config.n_attn
        ratio_0_to_1 = layer_id / max(config.n_layer - 1, 1)
        ratio_1_to_almost0 = 1.0 - layer_id / config.n_layer
        decay_speed = torch.tensor(
            [-5 + 8 * (h / (attn_sz - 1)) ** (0.7 + 1.3 * ratio_0_to_1) for h in range(attn_sz)]
        )
        self.time_decay = nn.Parameter(decay_speed)
        zigzag = torch.tensor([(i + 1) % 3 - 1 for i in range(attn_sz)]) * 0.5
        self.time_first = nn.Parameter(torch.ones(attn_sz) * math.log(0.3) + zigzag)
        x = (torch.arange(n_embd) / n_embd).view(1, 1, n_embd)
        self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
        self.time_mix_v = nn.Parameter(torch.pow(x, ratio_1_to_almost0) + 0.3 * ratio_0_to_1)
        self.time_mix_r = nn.Parameter(torch.pow(x, 0.5 * ratio_1_to_almost0))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.key = nn.Linear(n_embd, attn_sz, bias=False)
        self.value = nn.Linear(n_embd, attn_sz, bias=False)
        self.receptance = nn.Linear(n_embd, attn_sz, bias=False)
        self.output = nn.Linear(attn_sz, n_embd, bias=False)

    def wkv(self, w, u, k, v):
        B, T, C = k.shape
        aa = k.new_zeros(B, C)
        bb = k.new_zeros(B, C)
        pp = k.new_full((B, C), -1e38)
        w = -torch.exp(w)
        out = []
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            ww = u + kt
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out.append((e1 * aa + e2 * vt) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kt)
            e1, e2 = torch.exp(ww - p), torch.exp(kt - p)
            aa, bb, pp = e1 * aa + e2 * vt, e1 * bb + e2, p
        return torch.stack(out, 1)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xv = x * self.time_mix_v + xx * (1 - self.time_mix_v)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k, v, sr = self.key(xk), self.value(xv), torch.sigmoid(self.receptance(xr))
        return self.output(sr * self.wkv(self.time_decay, self.time_first, k, v))


class RWKV_ChannelMix(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.layer_id = layer_id
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        ratio_1_to_almost0 = 1.0 - layer_id / config.n_layer
        x = (torch.arange(config.n_embd) / config.n_embd).view(1, 1, -1)
        self.time_mix_k = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
        self.time_mix_r = nn.Parameter(torch.pow(x, ratio_1_to_almost0))
        hidden_sz = 4 * config.n_embd
        self.key = nn.Linear(config.n_embd, hidden_sz, bias=False)
        self.receptance = nn.Linear(config.n_embd, config.n_embd, bias=False)
        self.value = nn.Linear(hidden_sz, config.n_embd, bias=False)

    def forward(self, x):
        xx = self.time_shift(x)
        xk = x * self.time_mix_k + xx * (1 - self.time_mix_k)
        xr = x * self.time_mix_r + xx * (1 - self.time_mix_r)
        k = torch.square(torch.relu(self.key(xk)))
        return torch.sigmoid(self.receptance(xr)) * self.value(k)


class RWKVBlock(nn.Module):
    def __init__(self, config, layer_id):
        super().__init__()
        self.config, self.layer_id = config, layer_id
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        if layer_id == 0:
            self.ln0 = nn.LayerNorm(config.n_embd)
        self.att = RWKV_TimeMix(config, layer_id)
        self.ffn = RWKV_ChannelMix(config, layer_id)

    def forward(self, x):
        if self.layer_id == 0:
            x = self.ln0(x)
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class RWKVConfig:
    def __init__(self, vocab_size, ctx_len, **kwargs):
        self.vocab_size, self.ctx_len = vocab_size, ctx_len
        for k, v in kwargs.items():
            setattr(self, k, v)


class RWKV(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.blocks = nn.Sequential(*[RWKVBlock(config, i) for i in range(config.n_layer)])
        self.ln_out = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx):
        assert idx.shape[1] <= self.config.ctx_len, (
            "Cannot forward, because len(input) > model ctx_len."
        )
        return self.head(self.ln_out(self.blocks(self.emb(idx))))


@heldout("rwkv_v4", lambda: ((tokens(2, 12, 96),), {}))
def rwkv_v4():
    return RWKV(RWKVConfig(96, 32, n_layer=3, n_embd=48, n_attn=48))


# --------------------------------------------------------------------------- ALiBi GPT


def get_alibi_slopes(n_heads):
    def pow2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return pow2(n_heads)
    closest = 2 ** math.floor(math.log2(n_heads))
    return pow2(closest) + get_alibi_slopes(2 * closest)[0::2][: n_heads - closest]


@dataclass
class GPTConfig:
    block_size: int = 64
    vocab_size: int = 128
    n_layer: int = 2
    n_head: int = 6
    n_embd: int = 48
    dropout: float = 0.0
    bias: bool = True


class ALiBiSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout
        pos = torch.arange(config.block_size)
        rel = (pos[None, :] - pos[:, None]).float()
        slopes = torch.tensor(get_alibi_slopes(config.n_head)).view(-1, 1, 1)
        bias = slopes * rel[None]
        bias = bias.masked_fill(rel[None] > 0, float("-inf"))
        self.register_buffer("alibi", bias.unsqueeze(0), persistent=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=self.alibi[:, :, :T, :T],
            dropout_p=self.dropout if self.training else 0,
        )
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class MLP(nn.Module):
    def __init__(self, n_embd, bias=True, dropout=0.0, expansion=4):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, expansion * n_embd, bias=bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(expansion * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class GPTBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = ALiBiSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config.n_embd, config.bias, config.dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ALiBiGPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([GPTBlock(config) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def forward(self, idx):
        x = self.transformer.drop(self.transformer.wte(idx))  # no position embedding: ALiBi
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


@heldout("alibi_gpt", lambda: ((tokens(2, 20, 128),), {}))
def alibi_gpt():
    return ALiBiGPT(GPTConfig())


# --------------------------------------------------------------------------- word_language_model


class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            except KeyError as e:
                raise ValueError("An invalid option for `--model` was supplied") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (
                weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid),
            )
        return weight.new_zeros(self.nlayers, bsz, self.nhid)

    def forward(self, input, hidden=None):
        if hidden is None:
            hidden = self.init_hidden(input.size(1))
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden


@heldout("char_lstm_tied", lambda: ((tokens(15, 3, 80),), {}))
def char_lstm_tied():
    return RNNModel("LSTM", 80, 64, 64, 2, dropout=0.4, tie_weights=True)


# --------------------------------------------------------------------------- Kim CNN


class TextCNN(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        V, D, C, Ci, Co = args.embed_num, args.embed_dim, args.class_num, 1, args.kernel_num
        Ks = [int(k) for k in args.kernel_sizes.split(",")]
        self.embed = nn.Embedding(V, D)
        if args.multichannel:
            self.static_embed = nn.Embedding(V, D)
            self.static_embed.weight.requires_grad_(False)
            Ci = 2
        self.convs = nn.ModuleList([nn.Conv2d(Ci, Co, (K, D)) for K in Ks])
        self.dropout = nn.Dropout(args.dropout)
        self.fc1 = nn.Linear(len(Ks) * Co, C)

    def forward(self, x):
        e = self.embed(x).unsqueeze(1)
        if self.args.multichannel:
            e = torch.cat([e, self.static_embed(x).unsqueeze(1)], 1)
        xs = [F.relu(conv(e)).squeeze(3) for conv in self.convs]
        xs = [F.max_pool1d(i, i.size(2)).squeeze(2) for i in xs]
        return self.fc1(self.dropout(torch.cat(xs, 1)))


@heldout("text_cnn_kim", lambda: ((tokens(4, 30, 500),), {}), edit=("dropout", {"p": 0.3}))
def text_cnn_kim():
    args = argparse.Namespace(embed_num=500, embed_dim=32, class_num=5, kernel_num=16, kernel_sizes="3,4,5",
                              dropout=0.5, multichannel=True)  # fmt: skip
    return TextCNN(args)
