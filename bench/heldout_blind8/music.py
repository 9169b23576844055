"""Symbolic music generation: a MusicVAE-lite with a hierarchical (conductor) decoder and a
two-tier SampleRNN."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout

# ----------------------------------------------------------------------------- MusicVAE-lite


class BidirectionalLstmEncoder(nn.Module):
    def __init__(self, input_size, hidden_size, latent_size, num_layers=1):
        super().__init__()
        self.lstm = nn.LSTM(
            input_size, hidden_size, num_layers=num_layers, batch_first=True, bidirectional=True
        )
        self.mu = nn.Linear(2 * hidden_size, latent_size)
        self.sigma = nn.Linear(2 * hidden_size, latent_size)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        h = torch.cat([h[-2], h[-1]], dim=-1)
        return self.mu(h), F.softplus(self.sigma(h))


class Conductor(nn.Module):
    def __init__(self, latent_size, hidden_size, num_subsequences, embedding_size):
        super().__init__()
        self.num_subsequences = num_subsequences
        self.init = nn.Sequential(nn.Linear(latent_size, 2 * hidden_size), nn.Tanh())
        self.cell = nn.LSTMCell(1, hidden_size)
        self.out = nn.Linear(hidden_size, embedding_size)

    def forward(self, z):
        h, c = self.init(z).chunk(2, dim=-1)
        inp = z.new_zeros(z.shape[0], 1)
        embeddings = []
        for _ in range(self.num_subsequences):
            h, c = self.cell(inp, (h, c))
            embeddings.append(torch.tanh(self.out(h)))
        return embeddings


class CategoricalLstmDecoder(nn.Module):
    def __init__(self, vocab, embedding_size, hidden_size, num_layers=2):
        super().__init__()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.init = nn.Linear(embedding_size, 2 * hidden_size * num_layers)
        self.lstm = nn.LSTM(vocab + embedding_size, hidden_size, num_layers, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab)
        self.vocab = vocab

    def forward(self, c, targets):
        B, T = targets.shape
        hc = torch.tanh(self.init(c)).view(B, 2, self.num_layers, self.hidden_size)
        h0, c0 = hc[:, 0].transpose(0, 1).contiguous(), hc[:, 1].transpose(0, 1).contiguous()
        prev = F.one_hot(targets, self.vocab).float()
        prev = torch.cat([prev.new_zeros(B, 1, self.vocab), prev[:, :-1]], 1)  # teacher forcing
        inp = torch.cat([prev, c.unsqueeze(1).expand(B, T, -1)], -1)
        out, _ = self.lstm(inp, (h0, c0))
        return self.out(out)


class MusicVAE(nn.Module):
    def __init__(
        self,
        vocab=90,
        seq_len=32,
        bars=4,
        enc_hidden=32,
        dec_hidden=32,
        cond_hidden=32,
        latent=16,
        embedding=16,
        free_bits=48,
    ):
        super().__init__()
        assert seq_len % bars == 0
        self.bars = bars
        self.free_bits = free_bits
        self.seq_len = seq_len
        self.token_embedding = nn.Embedding(vocab, embedding)
        self.encoder = BidirectionalLstmEncoder(embedding, enc_hidden, latent)
        self.conductor = Conductor(latent, cond_hidden, bars, embedding)
        self.decoder = CategoricalLstmDecoder(vocab, embedding, dec_hidden)

    def forward(self, tokens):
        mu, sigma = self.encoder(self.token_embedding(tokens))
        z = mu + sigma * torch.randn_like(sigma) if self.training else mu
        bar_len = self.seq_len // self.bars
        logits = [
            self.decoder(c, tokens[:, i * bar_len : (i + 1) * bar_len])
            for i, c in enumerate(self.conductor(z))
        ]
        kl = -0.5 * torch.sum(1 + 2 * torch.log(sigma) - mu**2 - sigma**2, dim=-1)
        kl = torch.clamp(kl - self.free_bits * math.log(2.0), min=0)
        return torch.cat(logits, 1), kl


@heldout(
    "musicvae_hierarchical",
    lambda: ((torch.randint(0, 90, (2, 32), generator=torch.Generator().manual_seed(0)),), {}),
    edit=("decoder", {"num_layers": 1}),
)
def build_musicvae():
    return MusicVAE()


# ----------------------------------------------------------------------------- SampleRNN


def lecun_uniform(tensor):
    fan_in = nn.init._calculate_correct_fan(tensor, "fan_in")
    nn.init.uniform_(tensor, -math.sqrt(3 / fan_in), math.sqrt(3 / fan_in))


def concat_init(tensor, inits):
    tensor = tensor.data
    (length, fan_out) = tensor.size()
    fan_in = length // len(inits)
    chunk = tensor.new(fan_in, fan_out)
    for i, init in enumerate(inits):
        init(chunk)
        tensor[i * fan_in : (i + 1) * fan_in, :] = chunk


class LearnedUpsampling1d(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias=True):
        super().__init__()
        self.conv_t = nn.ConvTranspose1d(
            in_channels, out_channels, kernel_size, kernel_size, bias=False
        )
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels, kernel_size))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        self.conv_t.reset_parameters()
        if self.bias is not None:
            nn.init.constant_(self.bias, 0)

    def forward(self, input):
        (batch_size, _, length) = input.size()
        (kernel_size,) = self.conv_t.kernel_size
        bias = (
            self.bias.unsqueeze(0)
            .unsqueeze(2)
            .expand(batch_size, self.conv_t.out_channels, length, kernel_size)
            .contiguous()
            .view(batch_size, self.conv_t.out_channels, length * kernel_size)
        )
        return self.conv_t(input) + bias


class FrameLevelRNN(nn.Module):
    def __init__(self, frame_size, n_frame_samples, n_rnn, dim, learn_h0=True, weight_norm=True):
        super().__init__()
        self.frame_size = frame_size
        self.n_frame_samples = n_frame_samples
        self.dim = dim
        h0 = torch.zeros(n_rnn, dim)
        if learn_h0:
            self.h0 = nn.Parameter(h0)
        else:
            self.register_buffer("h0", h0)
        self.input_expand = nn.Conv1d(n_frame_samples, dim, 1)
        nn.init.kaiming_uniform_(self.input_expand.weight)
        nn.init.constant_(self.input_expand.bias, 0)
        if weight_norm:
            self.input_expand = nn.utils.parametrizations.weight_norm(self.input_expand)
        self.rnn = nn.GRU(dim, dim, n_rnn, batch_first=True)
        for i in range(n_rnn):
            concat_init(
                getattr(self.rnn, f"weight_ih_l{i}"), [lecun_uniform, lecun_uniform, lecun_uniform]
            )
            nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}"), 0)
            concat_init(
                getattr(self.rnn, f"weight_hh_l{i}"),
                [lecun_uniform, lecun_uniform, nn.init.orthogonal_],
            )
            nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}"), 0)
        self.upsampling = LearnedUpsampling1d(dim, dim, frame_size)
        nn.init.uniform_(self.upsampling.conv_t.weight, -math.sqrt(6 / dim), math.sqrt(6 / dim))
        nn.init.constant_(self.upsampling.bias, 0)
        if weight_norm:
            self.upsampling.conv_t = nn.utils.parametrizations.weight_norm(self.upsampling.conv_t)

    def forward(self, prev_samples, upper_tier_conditioning, hidden=None):
        (batch_size, _, _) = prev_samples.size()
        input = self.input_expand(prev_samples.permute(0, 2, 1)).permute(0, 2, 1)
        if upper_tier_conditioning is not None:
            input = input + upper_tier_conditioning
        if hidden is None:
            (n_rnn, _) = self.h0.size()
            hidden = self.h0.unsqueeze(1).expand(n_rnn, batch_size, self.dim).contiguous()
        (output, hidden) = self.rnn(input, hidden)
        output = self.upsampling(output.permute(0, 2, 1)).permute(0, 2, 1)
        return output, hidden


class SampleLevelMLP(nn.Module):
    def __init__(self, frame_size, dim, q_levels, weight_norm=True):
        super().__init__()
        self.q_levels = q_levels
        self.embedding = nn.Embedding(self.q_levels, self.q_levels)
        self.input = nn.Conv1d(q_levels, dim, kernel_size=frame_size, bias=False)
        self.hidden = nn.Conv1d(dim, dim, kernel_size=1)
        self.output = nn.Conv1d(dim, q_levels, kernel_size=1)
        if weight_norm:
            for name in ("input", "hidden", "output"):
                setattr(self, name, nn.utils.parametrizations.weight_norm(getattr(self, name)))

    def forward(self, prev_samples, upper_tier_conditioning):
        (batch_size, _, _) = upper_tier_conditioning.size()
        prev_samples = self.embedding(prev_samples.contiguous().view(-1)).view(
            batch_size, -1, self.q_levels
        )
        prev_samples = prev_samples.permute(0, 2, 1)
        upper_tier_conditioning = upper_tier_conditioning.permute(0, 2, 1)
        x = F.relu(self.input(prev_samples) + upper_tier_conditioning)
        x = F.relu(self.hidden(x))
        x = self.output(x).permute(0, 2, 1).contiguous()
        return F.log_softmax(x.view(-1, self.q_levels), dim=-1).view(batch_size, -1, self.q_levels)


class SampleRNN(nn.Module):
    def __init__(self, frame_sizes, n_rnn, dim, learn_h0, q_levels, weight_norm):
        super().__init__()
        self.dim = dim
        self.q_levels = q_levels
        ns_frame_samples = [frame_sizes[0]]
        for fs in frame_sizes[1:]:
            ns_frame_samples.append(ns_frame_samples[-1] * fs)
        self.frame_level_rnns = nn.ModuleList(
            [
                FrameLevelRNN(frame_size, n_frame_samples, n_rnn, dim, learn_h0, weight_norm)
                for (frame_size, n_frame_samples) in zip(frame_sizes, ns_frame_samples)
            ]
        )
        self.sample_level_mlp = SampleLevelMLP(frame_sizes[0], dim, q_levels, weight_norm)

    @property
    def lookback(self):
        return self.frame_level_rnns[-1].n_frame_samples

    def forward(self, input_sequences):
        batch_size, _ = input_sequences.size()
        upper_tier_conditioning = None
        for rnn in reversed(self.frame_level_rnns):
            from_index = self.lookback - rnn.n_frame_samples
            to_index = -rnn.n_frame_samples + 1
            prev = input_sequences[:, from_index:to_index].float()
            prev = 2 * prev / (self.q_levels - 1) - 1  # linear dequantization
            prev = prev.contiguous().view(batch_size, -1, rnn.n_frame_samples)
            upper_tier_conditioning, _ = rnn(prev, upper_tier_conditioning)
        bottom_frame_size = self.frame_level_rnns[0].frame_size
        mlp_input_sequences = input_sequences[:, self.lookback - bottom_frame_size :]
        return self.sample_level_mlp(mlp_input_sequences, upper_tier_conditioning)


@heldout(
    "samplernn_two_tier",
    lambda: (
        (torch.randint(0, 32, (2, 16 + 64 - 1), generator=torch.Generator().manual_seed(1)),),
        {},
    ),
    edit=("frame_level_rnns.1", {"n_rnn": 2, "learn_h0": False}),
)
def build_samplernn():
    return SampleRNN(
        frame_sizes=[4, 4], n_rnn=1, dim=32, learn_h0=True, q_levels=32, weight_norm=True
    )
