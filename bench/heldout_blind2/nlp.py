"""NLP encoders: a character-CNN classifier and an ELMo-like biLM (sharing the char encoder)."""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout

# --- char-CNN (Zhang et al. 2015 / Kim et al. 2016 style) ---------------------------------------


class HighwayLayer(nn.Module):
    def __init__(self, size, activation=F.relu, gate_bias=-2.0):
        super().__init__()
        self.proj = nn.Linear(size, size)
        self.gate = nn.Linear(size, size)
        self.gate.bias.data.fill_(gate_bias)
        self.activation = activation

    def forward(self, x):
        g = torch.sigmoid(self.gate(x))
        return g * self.activation(self.proj(x)) + (1 - g) * x


class CharConvEncoder(nn.Module):
    def __init__(
        self, n_chars, char_dim=16, filters=((1, 32), (2, 32), (3, 64), (4, 64)), highway_layers=2
    ):
        super().__init__()
        self.embed = nn.Embedding(n_chars, char_dim, padding_idx=0)
        for width, num in filters:
            setattr(self, f"conv_w{width}", nn.Conv1d(char_dim, num, kernel_size=width))
        self.widths = [w for w, _ in filters]
        self.out_dim = sum(n for _, n in filters)
        self.highway = nn.Sequential(*[HighwayLayer(self.out_dim) for _ in range(highway_layers)])

    def forward(self, chars):  # (batch, words, chars_per_word)
        b, w, c = chars.shape
        x = self.embed(chars.view(b * w, c)).transpose(1, 2)
        pooled = [
            torch.tanh(getattr(self, f"conv_w{k}")(x)).max(dim=-1).values for k in self.widths
        ]
        return self.highway(torch.cat(pooled, dim=-1)).view(b, w, -1)


class CharCNNClassifier(nn.Module):
    def __init__(self, n_chars, n_classes, hidden=64, dropout=0.5, **encoder_kwargs):
        super().__init__()
        self.encoder = CharConvEncoder(n_chars, **encoder_kwargs)
        self.rnn = nn.LSTM(self.encoder.out_dim, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(2 * hidden, n_classes)

    def forward(self, chars):
        h, _ = self.rnn(self.encoder(chars))
        return self.fc(self.dropout(h.mean(1)))


@heldout(
    "char_cnn_classifier",
    example=lambda: (
        (torch.randint(0, 60, (2, 7, 10), generator=torch.Generator().manual_seed(50)),),
        {},
    ),
)
def char_cnn_classifier() -> nn.Module:
    torch.manual_seed(50)
    return CharCNNClassifier(60, 4, hidden=32, char_dim=12)


# --- ELMo-like biLM: char encoder shared, forward/backward LSTM stacks, scalar mix -------------


class ScalarMix(nn.Module):
    def __init__(
        self,
        mixture_size: int,
        do_layer_norm: bool = False,
        initial_scalar_parameters=None,
        trainable: bool = True,
    ):
        super().__init__()
        self.mixture_size = mixture_size
        self.do_layer_norm = do_layer_norm
        if initial_scalar_parameters is None:
            initial_scalar_parameters = [0.0] * mixture_size
        self.scalar_parameters = nn.ParameterList(
            [
                nn.Parameter(torch.FloatTensor([v]), requires_grad=trainable)
                for v in initial_scalar_parameters
            ]
        )
        self.gamma = nn.Parameter(torch.FloatTensor([1.0]), requires_grad=trainable)

    def forward(self, tensors):
        normed_weights = torch.split(
            torch.softmax(torch.cat(list(self.scalar_parameters)), dim=0), split_size_or_sections=1
        )
        pieces = []
        for weight, tensor in zip(normed_weights, tensors):
            if self.do_layer_norm:
                tensor = F.layer_norm(tensor, tensor.shape[-1:])
            pieces.append(weight * tensor)
        return self.gamma * sum(pieces)


class LstmStack(nn.Module):
    """Unidirectional LSTM layers with projection and residual connections above the first."""

    def __init__(self, input_size, hidden_size, cell_size, num_layers, go_forward=True):
        super().__init__()
        self.go_forward = go_forward
        self.layers = nn.ModuleList()
        for i in range(num_layers):
            self.layers.append(
                nn.LSTM(
                    input_size if i == 0 else hidden_size,
                    cell_size,
                    batch_first=True,
                    proj_size=hidden_size,
                )
            )

    def forward(self, x):
        if not self.go_forward:
            x = x.flip(1)
        outputs = []
        for i, lstm in enumerate(self.layers):
            h, _ = lstm(x)
            x = h + x if i > 0 else h
            outputs.append(x.flip(1) if not self.go_forward else x)
        return outputs


class BiLanguageModel(nn.Module):
    def __init__(self, opts: argparse.Namespace):
        super().__init__()
        self.token_encoder = CharConvEncoder(
            opts.n_chars,
            char_dim=opts.char_dim,
            filters=opts.filters,
            highway_layers=opts.n_highway,
        )
        self.projection = nn.Linear(self.token_encoder.out_dim, opts.projection_dim)
        self.forward_lm = LstmStack(
            opts.projection_dim,
            opts.projection_dim,
            opts.cell_clip_dim,
            opts.n_layers,
            go_forward=True,
        )
        self.backward_lm = LstmStack(
            opts.projection_dim,
            opts.projection_dim,
            opts.cell_clip_dim,
            opts.n_layers,
            go_forward=False,
        )
        self.scalar_mix = ScalarMix(opts.n_layers + 1, do_layer_norm=opts.layer_norm)
        self.softmax = nn.Linear(opts.projection_dim, opts.vocab_size)

    def forward(self, chars):
        tokens = self.projection(self.token_encoder(chars))
        fwd = self.forward_lm(tokens)
        bwd = self.backward_lm(tokens)
        layers = [torch.cat([tokens, tokens], -1)] + [
            torch.cat([f, b], -1) for f, b in zip(fwd, bwd)
        ]
        return {
            "elmo_representations": self.scalar_mix(layers),
            "forward_logits": self.softmax(fwd[-1]),
            "backward_logits": self.softmax(bwd[-1]),
        }


@heldout(
    "elmo_bilm",
    example=lambda: (
        (torch.randint(1, 50, (2, 6, 8), generator=torch.Generator().manual_seed(52)),),
        {},
    ),
)
def elmo_bilm() -> nn.Module:
    torch.manual_seed(52)
    opts = argparse.Namespace(
        n_chars=50,
        char_dim=8,
        filters=[[1, 16], [2, 16], [3, 32]],
        n_highway=1,
        projection_dim=32,
        cell_clip_dim=64,
        n_layers=2,
        layer_norm=False,
        vocab_size=200,
    )
    return BiLanguageModel(opts)
