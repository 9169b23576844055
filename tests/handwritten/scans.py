"""Recurrences written out: a hand-rolled LSTM cell loop, a selective scan (Mamba) in plain torch
from a config dataclass, an RWKV-style model from an argparse Namespace, a DeepSpeech-like conv +
RNN stack with the RNN class as an argument."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn, tokens

# --- A hand-rolled LSTM cell stepped over time -----------------------------------------------------


class NaiveLSTMCell(nn.Module):
    def __init__(self, input_sz, hidden_sz):
        super().__init__()
        self.input_size = input_sz
        self.hidden_size = hidden_sz
        self.W = nn.Parameter(torch.Tensor(input_sz, hidden_sz * 4))
        self.U = nn.Parameter(torch.Tensor(hidden_sz, hidden_sz * 4))
        self.bias = nn.Parameter(torch.Tensor(hidden_sz * 4))
        self.init_weights()

    def init_weights(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            weight.data.uniform_(-stdv, stdv)

    def forward(self, x, init_states=None):
        bs, seq_sz, _ = x.size()
        hidden_seq = []
        if init_states is None:
            h_t, c_t = (
                torch.zeros(bs, self.hidden_size).to(x.device),
                torch.zeros(bs, self.hidden_size).to(x.device),
            )
        else:
            h_t, c_t = init_states
        HS = self.hidden_size
        for t in range(seq_sz):
            gates = x[:, t, :] @ self.W + h_t @ self.U + self.bias
            i_t, f_t, g_t, o_t = (
                torch.sigmoid(gates[:, :HS]),
                torch.sigmoid(gates[:, HS : HS * 2]),
                torch.tanh(gates[:, HS * 2 : HS * 3]),
                torch.sigmoid(gates[:, HS * 3 :]),
            )
            c_t = f_t * c_t + i_t * g_t
            h_t = o_t * torch.tanh(c_t)
            hidden_seq.append(h_t.unsqueeze(0))
        hidden_seq = torch.cat(hidden_seq, dim=0).transpose(0, 1).contiguous()
        return hidden_seq, (h_t, c_t)


class StackedNaive(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.cells = nn.ModuleList([NaiveLSTMCell(a, b) for a, b in zip(sizes, sizes[1:])])
        self.head = nn.Linear(sizes[-1], 1)

    def forward(self, x):
        for cell in self.cells:
            x, _ = cell(x)
        return self.head(x[:, -1])


case(
    "naive_lstm_loop",
    lambda: StackedNaive([4, 8, 8]),
    args(lambda: randn(2, 5, 4)),
    edit=("head", {"bias": False}),
    styles="torch.Tensor(a, b * 4) uniform-initialised, a time loop, zip(sizes, sizes[1:])",
)

# --- Mamba: a selective scan in plain torch, from a config dataclass ------------------------------


@dataclass
class ModelArgs:
    d_model: int
    n_layer: int
    vocab_size: int
    d_state: int = 16
    expand: int = 2
    dt_rank: Union[int, str] = "auto"
    d_conv: int = 4
    pad_vocab_size_multiple: int = 8
    conv_bias: bool = True
    bias: bool = False

    def __post_init__(self):
        self.d_inner = int(self.expand * self.d_model)
        if self.dt_rank == "auto":
            self.dt_rank = math.ceil(self.d_model / 16)
        if self.vocab_size % self.pad_vocab_size_multiple != 0:
            self.vocab_size += (
                self.pad_vocab_size_multiple - self.vocab_size % self.pad_vocab_size_multiple
            )


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class MambaBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.in_proj = nn.Linear(args.d_model, args.d_inner * 2, bias=args.bias)
        self.conv1d = nn.Conv1d(
            in_channels=args.d_inner,
            out_channels=args.d_inner,
            bias=args.conv_bias,
            kernel_size=args.d_conv,
            groups=args.d_inner,
            padding=args.d_conv - 1,
        )
        self.x_proj = nn.Linear(args.d_inner, args.dt_rank + args.d_state * 2, bias=False)
        self.dt_proj = nn.Linear(args.dt_rank, args.d_inner, bias=True)
        A = torch.arange(1, args.d_state + 1).repeat(args.d_inner, 1)
        self.A_log = nn.Parameter(torch.log(A))
        self.D = nn.Parameter(torch.ones(args.d_inner))
        self.out_proj = nn.Linear(args.d_inner, args.d_model, bias=args.bias)

    def forward(self, x):
        b, l, d = x.shape
        x, res = self.in_proj(x).split(split_size=[self.args.d_inner, self.args.d_inner], dim=-1)
        x = self.conv1d(x.transpose(1, 2))[:, :, :l].transpose(1, 2)
        x = F.silu(x)
        y = self.ssm(x)
        return self.out_proj(y * F.silu(res))

    def ssm(self, x):
        d_in, n = self.A_log.shape
        A = -torch.exp(self.A_log.float())
        delta, B, C = self.x_proj(x).split(split_size=[self.args.dt_rank, n, n], dim=-1)
        delta = F.softplus(self.dt_proj(delta))
        return self.selective_scan(x, delta, A, B, C, self.D.float())

    def selective_scan(self, u, delta, A, B, C, D):
        b, l, d_in = u.shape
        deltaA = torch.exp(torch.einsum("bld,dn->bldn", delta, A))
        deltaB_u = torch.einsum("bld,bln,bld->bldn", delta, B, u)
        x = torch.zeros((b, d_in, A.shape[1]), device=deltaA.device)
        ys = []
        for i in range(l):
            x = deltaA[:, i] * x + deltaB_u[:, i]
            ys.append(torch.einsum("bdn,bn->bd", x, C[:, i, :]))
        return torch.stack(ys, dim=1) + u * D


class ResidualBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.mixer = MambaBlock(args)
        self.norm = RMSNorm(args.d_model)

    def forward(self, x):
        return self.mixer(self.norm(x)) + x


class Mamba(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.d_model)
        self.layers = nn.ModuleList([ResidualBlock(args) for _ in range(args.n_layer)])
        self.norm_f = RMSNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.embedding.weight

    def forward(self, input_ids):
        x = self.embedding(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm_f(x))


case(
    "mamba_selective_scan",
    lambda: Mamba(ModelArgs(d_model=16, n_layer=2, vocab_size=50, d_state=4)),
    args(lambda: tokens(2, 6)),
    edit=("norm_f", {"eps": 1e-6}),
    styles="a config dataclass with __post_init__ (dt_rank='auto'), a scan loop, einsum, tied head",
)

# --- RWKV-style: an argparse Namespace of hyperparameters, token shift, time decay ----------------


class RWKV_TimeMix(nn.Module):
    def __init__(self, args, layer_id):
        super().__init__()
        self.layer_id = layer_id
        self.n_embd = args.n_embd
        attn_sz = args.n_embd
        ratio_0_to_1 = layer_id / (args.n_layer - 1) if args.n_layer > 1 else 0.0
        decay_speed = torch.ones(attn_sz)
        for h in range(attn_sz):
            decay_speed[h] = -5 + 8 * (h / (attn_sz - 1)) ** (0.7 + 1.3 * ratio_0_to_1)
        self.time_decay = nn.Parameter(decay_speed)
        self.time_first = nn.Parameter(torch.ones(attn_sz) * math.log(0.3))
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_k = nn.Parameter(
            torch.pow(torch.linspace(0, 1, args.n_embd), 1.0 - ratio_0_to_1)
        )
        self.time_mix_v = nn.Parameter(
            torch.pow(torch.linspace(0, 1, args.n_embd), 1.0 - ratio_0_to_1)
        )
        self.time_mix_r = nn.Parameter(
            torch.pow(torch.linspace(0, 1, args.n_embd), 0.5 * (1.0 - ratio_0_to_1))
        )
        self.key = nn.Linear(args.n_embd, attn_sz, bias=False)
        self.value = nn.Linear(args.n_embd, attn_sz, bias=False)
        self.receptance = nn.Linear(args.n_embd, attn_sz, bias=False)
        self.output = nn.Linear(attn_sz, args.n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.size()
        xx = self.time_shift(x)
        k = self.key(x * self.time_mix_k + xx * (1 - self.time_mix_k))
        v = self.value(x * self.time_mix_v + xx * (1 - self.time_mix_v))
        sr = torch.sigmoid(self.receptance(x * self.time_mix_r + xx * (1 - self.time_mix_r)))
        w = -torch.exp(self.time_decay)
        num = torch.zeros(B, C, device=x.device)
        den = torch.zeros(B, C, device=x.device)
        outs = []
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            e1 = torch.exp(self.time_first + kt)
            outs.append((num + e1 * vt) / (den + e1))
            num = torch.exp(w) * num + torch.exp(kt) * vt
            den = torch.exp(w) * den + torch.exp(kt)
        return self.output(sr * torch.stack(outs, dim=1))


class RWKV_ChannelMix(nn.Module):
    def __init__(self, args, layer_id):
        super().__init__()
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_k = nn.Parameter(torch.ones(1, 1, args.n_embd))
        hidden_sz = 4 * args.n_embd
        self.key = nn.Linear(args.n_embd, hidden_sz, bias=False)
        self.receptance = nn.Linear(args.n_embd, args.n_embd, bias=False)
        self.value = nn.Linear(hidden_sz, args.n_embd, bias=False)

    def forward(self, x):
        xx = self.time_shift(x)
        k = torch.square(torch.relu(self.key(x * self.time_mix_k + xx * (1 - self.time_mix_k))))
        return torch.sigmoid(self.receptance(x)) * self.value(k)


class RWKVBlock(nn.Module):
    def __init__(self, args, layer_id):
        super().__init__()
        self.ln1 = nn.LayerNorm(args.n_embd)
        self.ln2 = nn.LayerNorm(args.n_embd)
        if layer_id == 0:
            self.ln0 = nn.LayerNorm(args.n_embd)
        self.att = RWKV_TimeMix(args, layer_id)
        self.ffn = RWKV_ChannelMix(args, layer_id)
        self.layer_id = layer_id

    def forward(self, x):
        if self.layer_id == 0:
            x = self.ln0(x)
        x = x + self.att(self.ln1(x))
        return x + self.ffn(self.ln2(x))


class RWKV(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.emb = nn.Embedding(args.vocab_size, args.n_embd)
        self.blocks = nn.Sequential(*[RWKVBlock(args, i) for i in range(args.n_layer)])
        self.ln_out = nn.LayerNorm(args.n_embd)
        self.head = nn.Linear(args.n_embd, args.vocab_size, bias=False)

    def forward(self, idx):
        return self.head(self.ln_out(self.blocks(self.emb(idx))))


case(
    "rwkv_namespace",
    lambda: RWKV(argparse.Namespace(n_embd=16, n_layer=2, vocab_size=40)),
    args(lambda: tokens(2, 6, vocab=40)),
    edit=("ln_out", {"eps": 1e-6}),
    styles="an argparse Namespace of hyperparameters, layer_id-dependent init loops, ln0 only in layer 0",
)

# --- DeepSpeech-like: conv front end, BatchRNN stack, the RNN class as an argument ---------------


class SequenceWise(nn.Module):
    def __init__(self, module):
        super(SequenceWise, self).__init__()
        self.module = module

    def forward(self, x):
        t, n = x.size(0), x.size(1)
        x = x.view(t * n, -1)
        return self.module(x).view(t, n, -1)


class BatchRNN(nn.Module):
    def __init__(
        self, input_size, hidden_size, rnn_type=nn.LSTM, bidirectional=False, batch_norm=True
    ):
        super(BatchRNN, self).__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.batch_norm = SequenceWise(nn.BatchNorm1d(input_size)) if batch_norm else None
        self.rnn = rnn_type(
            input_size=input_size, hidden_size=hidden_size, bidirectional=bidirectional, bias=True
        )
        self.num_directions = 2 if bidirectional else 1

    def forward(self, x):
        if self.batch_norm is not None:
            x = self.batch_norm(x)
        x, h = self.rnn(x)
        if self.bidirectional:
            x = x.view(x.size(0), x.size(1), 2, -1).sum(2).view(x.size(0), x.size(1), -1)
        return x


class DeepSpeech(nn.Module):
    def __init__(
        self,
        rnn_type=nn.LSTM,
        labels="abc",
        rnn_hidden_size=768,
        nb_layers=5,
        audio_conf=None,
        bidirectional=True,
    ):
        super(DeepSpeech, self).__init__()
        audio_conf = audio_conf or {"sample_rate": 16000, "window_size": 0.02}
        self.audio_conf = audio_conf
        num_classes = len(labels)
        self.conv = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=(41, 11), stride=(2, 2), padding=(20, 5)),
            nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20, inplace=True),
            nn.Conv2d(8, 8, kernel_size=(21, 11), stride=(2, 1), padding=(10, 5)),
            nn.BatchNorm2d(8),
            nn.Hardtanh(0, 20, inplace=True),
        )
        rnn_input_size = int(
            math.floor((audio_conf["sample_rate"] * audio_conf["window_size"]) / 2) + 1
        )
        rnn_input_size = int(math.floor(rnn_input_size + 2 * 20 - 41) / 2 + 1)
        rnn_input_size = int(math.floor(rnn_input_size + 2 * 10 - 21) / 2 + 1)
        rnn_input_size *= 8
        rnns = [
            (
                "0",
                BatchRNN(
                    rnn_input_size, rnn_hidden_size, rnn_type, bidirectional, batch_norm=False
                ),
            )
        ]
        for x in range(nb_layers - 1):
            rnns.append(
                (
                    "%d" % (x + 1),
                    BatchRNN(rnn_hidden_size, rnn_hidden_size, rnn_type, bidirectional),
                )
            )
        from collections import OrderedDict

        self.rnns = nn.Sequential(OrderedDict(rnns))
        self.fc = nn.Sequential(
            SequenceWise(
                nn.Sequential(
                    nn.BatchNorm1d(rnn_hidden_size),
                    nn.Linear(rnn_hidden_size, num_classes, bias=False),
                )
            )
        )

    def forward(self, x):
        x = self.conv(x)
        sizes = x.size()
        x = (
            x.view(sizes[0], sizes[1] * sizes[2], sizes[3])
            .transpose(1, 2)
            .transpose(0, 1)
            .contiguous()
        )
        x = self.fc(self.rnns(x))
        return x.transpose(0, 1)


case(
    "deepspeech_rnn_class",
    lambda: DeepSpeech(
        rnn_type=nn.GRU,
        labels="_abcdefg ",
        rnn_hidden_size=16,
        nb_layers=2,
        audio_conf={"sample_rate": 800, "window_size": 0.02},
    ),
    args(lambda: randn(2, 1, 9, 10)),
    edit=("conv.2", {"inplace": False}),
    styles="an RNN class as argument, a dict of audio settings, sizes computed with math.floor, OrderedDict",
)
