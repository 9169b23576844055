"""Forecasting with covariates: a Temporal Fusion Transformer (lite) and an Informer-lite."""

from __future__ import annotations

import math
from enum import Enum

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --- Temporal Fusion Transformer, lite --------------------------------------------------------


class GatedLinearUnit(nn.Module):
    def __init__(self, input_size, hidden_size=None, dropout=None):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout is not None else None
        self.hidden_size = hidden_size or input_size
        self.fc = nn.Linear(input_size, self.hidden_size * 2)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        return F.glu(self.fc(x), dim=-1)


class GatedResidualNetwork(nn.Module):
    def __init__(
        self, input_size, hidden_size, output_size, dropout=0.1, context_size=None, residual=False
    ):
        super().__init__()
        self.residual = residual
        if input_size != output_size and not residual:
            self.resample = nn.Linear(input_size, output_size)
        else:
            self.resample = None
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.elu = nn.ELU()
        if context_size is not None:
            self.context = nn.Linear(context_size, hidden_size, bias=False)
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.gate_norm = nn.ModuleDict(
            {
                "glu": GatedLinearUnit(hidden_size, output_size, dropout),
                "norm": nn.LayerNorm(output_size),
            }
        )

    def forward(self, x, context=None):
        residual = self.resample(x) if self.resample is not None else x
        x = self.fc1(x)
        if context is not None:
            x = x + self.context(context)
        x = self.fc2(self.elu(x))
        return self.gate_norm["norm"](self.gate_norm["glu"](x) + residual)


class VariableSelectionNetwork(nn.Module):
    def __init__(
        self, input_sizes: dict, hidden_size: int, dropout: float = 0.1, context_size=None
    ):
        super().__init__()
        self.input_sizes = input_sizes
        self.hidden_size = hidden_size
        total = sum(input_sizes.values())
        self.flattened_grn = GatedResidualNetwork(
            total,
            min(hidden_size, len(input_sizes)),
            len(input_sizes),
            dropout,
            context_size,
            residual=False,
        )
        self.single_variable_grns = nn.ModuleDict()
        self.prescalers = nn.ModuleDict()
        for name, size in input_sizes.items():
            self.single_variable_grns[name] = GatedResidualNetwork(
                hidden_size, hidden_size, hidden_size, dropout
            )
            self.prescalers[name] = nn.Linear(size, hidden_size)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x: dict, context=None):
        flat = torch.cat([x[name] for name in self.input_sizes], dim=-1)
        weights = self.softmax(self.flattened_grn(flat, context)).unsqueeze(-2)
        outs = torch.stack(
            [self.single_variable_grns[n](self.prescalers[n](x[n])) for n in self.input_sizes],
            dim=-1,
        )
        return (outs * weights).sum(-1), weights


class TFTLite(nn.Module):
    def __init__(
        self,
        static_sizes,
        past_sizes,
        hidden_size=16,
        n_heads=4,
        output_size=7,
        horizon=6,
        dropout=0.1,
    ):
        super().__init__()
        self.horizon = horizon
        self.static_vsn = VariableSelectionNetwork(static_sizes, hidden_size, dropout)
        self.static_context = GatedResidualNetwork(hidden_size, hidden_size, hidden_size, dropout)
        self.past_vsn = VariableSelectionNetwork(
            past_sizes, hidden_size, dropout, context_size=hidden_size
        )
        self.lstm_encoder = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.post_lstm_gate = GatedLinearUnit(hidden_size, dropout=dropout)
        self.post_lstm_norm = nn.LayerNorm(hidden_size)
        self.enrichment = GatedResidualNetwork(
            hidden_size, hidden_size, hidden_size, dropout, context_size=hidden_size
        )
        self.attention = nn.MultiheadAttention(
            hidden_size, n_heads, dropout=dropout, batch_first=True
        )
        self.post_attn = GatedResidualNetwork(hidden_size, hidden_size, hidden_size, dropout)
        self.output_layer = nn.Linear(hidden_size, output_size)  # quantiles

    def forward(self, static: dict, past: dict):
        s, _ = self.static_vsn(static)
        c = self.static_context(s)
        T = next(iter(past.values())).shape[1]
        ctx = c.unsqueeze(1).expand(-1, T, -1)
        x, _ = self.past_vsn(past, ctx)
        h, _ = self.lstm_encoder(x)
        h = self.post_lstm_norm(self.post_lstm_gate(h) + x)
        h = self.enrichment(h, ctx)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=h.device), diagonal=1)
        a, _ = self.attention(h, h, h, attn_mask=mask)
        h = self.post_attn(a + h)
        return self.output_layer(h[:, -self.horizon :])


@heldout(
    "tft_lite",
    example=lambda: (
        (
            {"store": rand(2, 4, seed=1), "region": rand(2, 3, seed=2)},
            {
                "sales": rand(2, 20, 1, seed=3),
                "price": rand(2, 20, 1, seed=4),
                "dow": rand(2, 20, 7, seed=5),
            },
        ),
        {},
    ),
)
def tft_lite() -> nn.Module:
    torch.manual_seed(12)
    return TFTLite(
        {"store": 4, "region": 3}, {"sales": 1, "price": 1, "dow": 7}, hidden_size=16, n_heads=4
    )


# --- Informer-lite: embeddings + full attention + distilling convs ---------------------------


class TimeFeature(Enum):
    HOUR = 24
    WEEKDAY = 7
    DAY = 32
    MONTH = 13


class DataEmbedding(nn.Module):
    def __init__(
        self,
        c_in,
        d_model,
        freqs=(TimeFeature.HOUR, TimeFeature.WEEKDAY, TimeFeature.MONTH),
        dropout=0.1,
        max_len=512,
    ):
        super().__init__()
        self.token = nn.Conv1d(
            c_in, d_model, kernel_size=3, padding=1, padding_mode="circular", bias=False
        )
        nn.init.kaiming_normal_(self.token.weight, mode="fan_in", nonlinearity="leaky_relu")
        pe = torch.zeros(max_len, d_model).float()
        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.temporal = nn.ModuleList(nn.Embedding(f.value, d_model) for f in freqs)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x, x_mark):
        x = self.token(x.permute(0, 2, 1)).transpose(1, 2) + self.pe[:, : x.size(1)]
        for i, emb in enumerate(self.temporal):
            x = x + emb(x_mark[:, :, i])
        return self.dropout(x)


class ConvLayer(nn.Module):
    """Self-attention distilling: halves the sequence."""

    def __init__(self, c_in):
        super().__init__()
        self.downConv = nn.Conv1d(c_in, c_in, kernel_size=3, padding=1, padding_mode="circular")
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
        self.conv1 = nn.Conv1d(in_channels=d_model, out_channels=d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(in_channels=d_ff, out_channels=d_model, kernel_size=1)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x):
        new_x, _ = self.attention(x, x, x)
        x = self.norm1(x + self.dropout(new_x))
        y = self.dropout(self.activation(self.conv1(x.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y)


class InformerEncoder(nn.Module):
    def __init__(
        self,
        c_in,
        c_out,
        d_model=512,
        n_heads=8,
        e_layers=3,
        d_ff=512,
        dropout=0.0,
        activation="gelu",
        distil=True,
    ):
        super().__init__()
        self.enc_embedding = DataEmbedding(c_in, d_model, dropout=dropout)
        self.attn_layers = nn.ModuleList(
            [
                EncoderLayer(
                    nn.MultiheadAttention(d_model, n_heads, dropout=dropout, batch_first=True),
                    d_model,
                    d_ff,
                    dropout=dropout,
                    activation=activation,
                )
                for _ in range(e_layers)
            ]
        )
        self.conv_layers = (
            nn.ModuleList([ConvLayer(d_model) for _ in range(e_layers - 1)]) if distil else None
        )
        self.norm = nn.LayerNorm(d_model)
        self.projection = nn.Linear(d_model, c_out, bias=True)

    def forward(self, x_enc, x_mark_enc):
        x = self.enc_embedding(x_enc, x_mark_enc)
        if self.conv_layers is not None:
            for attn_layer, conv_layer in zip(self.attn_layers, self.conv_layers):
                x = conv_layer(attn_layer(x))
            x = self.attn_layers[-1](x)
        else:
            for attn_layer in self.attn_layers:
                x = attn_layer(x)
        return self.projection(self.norm(x))


def _informer_inputs():
    g = torch.Generator().manual_seed(13)
    marks = torch.stack(
        [
            torch.randint(0, 24, (2, 48), generator=g),
            torch.randint(0, 7, (2, 48), generator=g),
            torch.randint(0, 13, (2, 48), generator=g),
        ],
        -1,
    )
    return (rand(2, 48, 5), marks), {}


@heldout("informer_encoder", example=_informer_inputs)
def informer_encoder() -> nn.Module:
    torch.manual_seed(13)
    return InformerEncoder(5, 5, d_model=32, n_heads=4, e_layers=3, d_ff=64, dropout=0.05)
