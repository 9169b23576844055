"""Transformer forecasters: PatchTST with RevIN, an Informer-style ProbSparse encoder."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- PatchTST


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True):
        super().__init__()
        self.eps, self.affine = eps, affine
        if self.affine:
            self.affine_weight = nn.Parameter(torch.ones(num_features))
            self.affine_bias = nn.Parameter(torch.zeros(num_features))

    def forward(self, x, mode: str):
        if mode == "norm":
            self.mean = x.mean(dim=1, keepdim=True).detach()
            self.stdev = torch.sqrt(x.var(dim=1, keepdim=True, unbiased=False) + self.eps).detach()
            x = (x - self.mean) / self.stdev
            if self.affine:
                x = x * self.affine_weight + self.affine_bias
        elif mode == "denorm":
            if self.affine:
                x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
            x = x * self.stdev + self.mean
        else:
            raise NotImplementedError(mode)
        return x


class TSTEncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff=256, dropout=0.0, activation="gelu"):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True)
        self.norm_attn = nn.BatchNorm1d(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            getattr(nn, activation.upper() if activation == "gelu" else "ReLU")(),
            nn.Dropout(dropout),
            nn.Linear(d_ff, d_model),
        )
        self.norm_ffn = nn.BatchNorm1d(d_model)
        self.dropout = nn.Dropout(dropout)

    def _bn(self, norm, x):
        return norm(x.transpose(1, 2)).transpose(1, 2)

    def forward(self, src):
        src2, _ = self.self_attn(src, src, src, need_weights=False)
        src = self._bn(self.norm_attn, src + self.dropout(src2))
        return self._bn(self.norm_ffn, src + self.dropout(self.ff(src)))


class PatchTST(nn.Module):
    def __init__(self, configs: argparse.Namespace):
        super().__init__()
        self.patch_len, self.stride = configs.patch_len, configs.stride
        self.n_vars = configs.enc_in
        patch_num = (configs.seq_len - self.patch_len) // self.stride + 2
        self.revin = RevIN(configs.enc_in) if configs.revin else None
        self.padding = nn.ReplicationPad1d((0, self.stride))
        self.W_P = nn.Linear(self.patch_len, configs.d_model)
        self.W_pos = nn.Parameter(torch.empty(patch_num, configs.d_model).uniform_(-0.02, 0.02))
        self.layers = nn.ModuleList(
            TSTEncoderLayer(configs.d_model, configs.n_heads, configs.d_ff, configs.dropout)
            for _ in range(configs.e_layers)
        )
        self.head = nn.Sequential(
            nn.Flatten(start_dim=-2),
            nn.Linear(configs.d_model * patch_num, configs.pred_len),
            nn.Dropout(configs.head_dropout),
        )

    def forward(self, x):  # x: [bs, seq_len, n_vars]
        if self.revin is not None:
            x = self.revin(x, "norm")
        z = self.padding(x.permute(0, 2, 1))
        z = z.unfold(dimension=-1, size=self.patch_len, step=self.stride)
        bs = z.shape[0]
        u = self.W_P(z).reshape(bs * self.n_vars, z.shape[2], -1) + self.W_pos
        for layer in self.layers:
            u = layer(u)
        u = u.reshape(bs, self.n_vars, u.shape[-2], u.shape[-1])
        out = self.head(u).permute(0, 2, 1)
        if self.revin is not None:
            out = self.revin(out, "denorm")
        return out


def _patchtst_args(**over):
    args = argparse.Namespace(
        seq_len=48, pred_len=12, enc_in=3, patch_len=8, stride=4, d_model=32, n_heads=4,
        d_ff=64, e_layers=2, dropout=0.1, head_dropout=0.0, revin=True,
    )  # fmt: skip
    vars(args).update(over)
    return args


@heldout(
    "patchtst",
    lambda: ((rand(2, 48, 3),), {}),
    edit=("layers.1", {"n_heads": 2, "d_ff": 48}),
)
def patchtst():
    return PatchTST(_patchtst_args())


# --------------------------------------------------------------------------- Informer encoder


@dataclass
class InformerConfig:
    enc_in: int = 4
    d_model: int = 32
    n_heads: int = 4
    e_layers: int = 2
    d_ff: int = 64
    factor: int = 3
    dropout: float = 0.05
    distil: bool = True
    c_out: int = 4
    marks: list[int] = field(default_factory=lambda: [13, 32, 7, 24])


class ProbAttention(nn.Module):
    def __init__(self, factor=5, scale=None):
        super().__init__()
        self.factor, self.scale = factor, scale

    def forward(self, queries, keys, values):
        B, L_Q, H, D = queries.shape
        L_K = keys.shape[1]
        q, k, v = (t.transpose(1, 2) for t in (queries, keys, values))
        u_part = min(self.factor * int(math.ceil(math.log(L_K))), L_K)
        u = min(self.factor * int(math.ceil(math.log(L_Q))), L_Q)
        # Informer samples keys at random; a fixed stride keeps the forward deterministic here
        index_sample = torch.arange(u_part, device=q.device) * (L_K // u_part)
        qk_sample = torch.matmul(
            q.unsqueeze(-2), k[:, :, index_sample].unsqueeze(-3).transpose(-2, -1)
        )
        qk_sample = qk_sample.squeeze(-2)
        M = qk_sample.max(-1)[0] - qk_sample.sum(-1) / L_K
        M_top = M.topk(u, sorted=False)[1]
        b_idx = torch.arange(B)[:, None, None]
        h_idx = torch.arange(H)[None, :, None]
        q_reduce = q[b_idx, h_idx, M_top]
        scores = torch.matmul(q_reduce, k.transpose(-2, -1)) * (self.scale or 1.0 / math.sqrt(D))
        context = v.mean(dim=-2, keepdim=True).expand(B, H, L_Q, D).clone()
        context[b_idx, h_idx, M_top] = torch.matmul(torch.softmax(scores, dim=-1), v)
        return context.transpose(1, 2).contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, n_heads, d_keys=None, d_values=None):
        super().__init__()
        d_keys = d_keys or (d_model // n_heads)
        d_values = d_values or (d_model // n_heads)
        self.inner_attention = attention
        self.query_projection = nn.Linear(d_model, d_keys * n_heads)
        self.key_projection = nn.Linear(d_model, d_keys * n_heads)
        self.value_projection = nn.Linear(d_model, d_values * n_heads)
        self.out_projection = nn.Linear(d_values * n_heads, d_model)
        self.n_heads = n_heads

    def forward(self, queries, keys, values):
        B, L, _ = queries.shape
        H = self.n_heads
        q = self.query_projection(queries).view(B, L, H, -1)
        k = self.key_projection(keys).view(B, keys.shape[1], H, -1)
        v = self.value_projection(values).view(B, values.shape[1], H, -1)
        return self.out_projection(self.inner_attention(q, k, v).view(B, L, -1))


class ConvLayer(nn.Module):
    def __init__(self, c_in):
        super().__init__()
        self.downConv = nn.Conv1d(c_in, c_in, 3, padding=1, padding_mode="circular")
        self.norm = nn.BatchNorm1d(c_in)
        self.activation = nn.ELU()
        self.maxPool = nn.MaxPool1d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.maxPool(self.activation(self.norm(self.downConv(x.permute(0, 2, 1)))))
        return x.transpose(1, 2)


class EncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff=None, dropout=0.1, activation="relu"):
        super().__init__()
        d_ff = d_ff or 4 * d_model
        self.attention = attention
        self.conv1 = nn.Conv1d(d_model, d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(d_ff, d_model, kernel_size=1)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x):
        x = self.norm1(x + self.dropout(self.attention(x, x, x)))
        y = self.dropout(self.activation(self.conv1(x.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y)


class TemporalEmbedding(nn.Module):
    def __init__(self, d_model, sizes):
        super().__init__()
        for name, size in zip(("month", "day", "weekday", "hour"), sizes):
            setattr(self, f"{name}_embed", nn.Embedding(size, d_model))
        self.names = ("month", "day", "weekday", "hour")[: len(sizes)]

    def forward(self, x_mark):
        return sum(getattr(self, f"{n}_embed")(x_mark[..., i]) for i, n in enumerate(self.names))


class Informer(nn.Module):
    def __init__(self, cfg: InformerConfig):
        super().__init__()
        self.value_embedding = nn.Conv1d(
            cfg.enc_in, cfg.d_model, 3, padding=1, padding_mode="circular"
        )
        pe = torch.zeros(512, cfg.d_model)
        position = torch.arange(0, 512).float().unsqueeze(1)
        div_term = torch.exp(
            torch.arange(0, cfg.d_model, 2).float() * -(math.log(10000.0) / cfg.d_model)
        )
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)
        self.temporal_embedding = TemporalEmbedding(cfg.d_model, cfg.marks)
        self.attn_layers = nn.ModuleList(
            EncoderLayer(
                AttentionLayer(ProbAttention(cfg.factor), cfg.d_model, cfg.n_heads),
                cfg.d_model, cfg.d_ff, dropout=cfg.dropout, activation="gelu",
            )
            for _ in range(cfg.e_layers)
        )  # fmt: skip
        self.conv_layers = (
            nn.ModuleList(ConvLayer(cfg.d_model) for _ in range(cfg.e_layers - 1))
            if cfg.distil
            else None
        )
        self.norm = nn.LayerNorm(cfg.d_model)
        self.projection = nn.Linear(cfg.d_model, cfg.c_out)

    def forward(self, x_enc, x_mark_enc):
        x = self.value_embedding(x_enc.permute(0, 2, 1)).transpose(1, 2)
        x = x + self.pe[:, : x.shape[1]] + self.temporal_embedding(x_mark_enc)
        if self.conv_layers is not None:
            for attn_layer, conv_layer in zip(self.attn_layers, self.conv_layers):
                x = conv_layer(attn_layer(x))
            x = self.attn_layers[-1](x)
        else:
            for attn_layer in self.attn_layers:
                x = attn_layer(x)
        return self.projection(self.norm(x))


def _time_marks():
    g = torch.Generator().manual_seed(3)
    cols = [torch.randint(0, n, (2, 32, 1), generator=g) for n in (13, 32, 7, 24)]
    return torch.cat(cols, -1)


@heldout("informer_encoder", lambda: ((rand(2, 32, 4), _time_marks()), {}))
def informer_encoder():
    return Informer(InformerConfig())
