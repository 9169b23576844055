# ruff: noqa: UP008  (the authors' habits are kept: this set measures code as people write it)
"""Speech: a Tacotron-style text encoder (prenet + CBHG) and a small Conformer encoder."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --- Tacotron 1 encoder, in the style of the popular community ports -------------------------


class Prenet(nn.Module):
    def __init__(self, in_dim, sizes=[256, 128], dropout=0.5):  # noqa: B006  (as the authors wrote it)
        super(Prenet, self).__init__()
        in_sizes = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList(
            [nn.Linear(in_size, out_size) for (in_size, out_size) in zip(in_sizes, sizes)]
        )
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(dropout)

    def forward(self, inputs):
        for linear in self.layers:
            inputs = self.dropout(self.relu(linear(inputs)))
        return inputs


class BatchNormConv1d(nn.Module):
    def __init__(self, in_dim, out_dim, kernel_size, stride, padding, activation=None):
        super(BatchNormConv1d, self).__init__()
        self.conv1d = nn.Conv1d(
            in_dim, out_dim, kernel_size=kernel_size, stride=stride, padding=padding, bias=False
        )
        # Following tensorflow's default parameters
        self.bn = nn.BatchNorm1d(out_dim, momentum=0.99, eps=1e-3)
        self.activation = activation

    def forward(self, x):
        x = self.conv1d(x)
        if self.activation is not None:
            x = self.activation(x)
        return self.bn(x)


class Highway(nn.Module):
    def __init__(self, in_size, out_size):
        super(Highway, self).__init__()
        self.H = nn.Linear(in_size, out_size)
        self.H.bias.data.zero_()
        self.T = nn.Linear(in_size, out_size)
        self.T.bias.data.fill_(-1)
        self.relu = nn.ReLU()
        self.sigmoid = nn.Sigmoid()

    def forward(self, inputs):
        H = self.relu(self.H(inputs))
        T = self.sigmoid(self.T(inputs))
        return H * T + inputs * (1.0 - T)


class CBHG(nn.Module):
    """CBHG module: a recurrent neural network composed of:
    - 1-d convolution banks
    - Highway networks + residual connections
    - Bidirectional gated recurrent units
    """

    def __init__(self, in_dim, K=16, projections=[128, 128], highway_layers=4):  # noqa: B006
        super(CBHG, self).__init__()
        self.in_dim = in_dim
        self.relu = nn.ReLU()
        self.conv1d_banks = nn.ModuleList(
            [
                BatchNormConv1d(
                    in_dim, in_dim, kernel_size=k, stride=1, padding=k // 2, activation=self.relu
                )
                for k in range(1, K + 1)
            ]
        )
        self.max_pool1d = nn.MaxPool1d(kernel_size=2, stride=1, padding=1)

        in_sizes = [K * in_dim] + projections[:-1]
        activations = [self.relu] * (len(projections) - 1) + [None]
        self.conv1d_projections = nn.ModuleList(
            [
                BatchNormConv1d(
                    in_size, out_size, kernel_size=3, stride=1, padding=1, activation=ac
                )
                for (in_size, out_size, ac) in zip(in_sizes, projections, activations)
            ]
        )

        self.pre_highway = nn.Linear(projections[-1], in_dim, bias=False)
        self.highways = nn.ModuleList([Highway(in_dim, in_dim) for _ in range(highway_layers)])

        self.gru = nn.GRU(in_dim, in_dim, 1, batch_first=True, bidirectional=True)

    def forward(self, inputs, input_lengths=None):
        # (B, T_in, in_dim)
        x = inputs
        # Needed to perform conv1d on time-axis
        # (B, in_dim, T_in)
        if x.size(-1) == self.in_dim:
            x = x.transpose(1, 2)

        T = x.size(-1)

        # (B, in_dim*K, T_in)
        # Concat conv1d bank outputs
        x = torch.cat([conv1d(x)[:, :, :T] for conv1d in self.conv1d_banks], dim=1)
        assert x.size(1) == self.in_dim * len(self.conv1d_banks)
        x = self.max_pool1d(x)[:, :, :T]

        for conv1d in self.conv1d_projections:
            x = conv1d(x)

        # (B, T_in, in_dim)
        # Back to the original shape
        x = x.transpose(1, 2)

        if x.size(-1) != self.in_dim:
            x = self.pre_highway(x)

        # Residual connection
        x += inputs
        for highway in self.highways:
            x = highway(x)

        outputs, _ = self.gru(x)
        return outputs


class Encoder(nn.Module):
    def __init__(self, in_dim, prenet_sizes=(256, 128), K=16):
        super(Encoder, self).__init__()
        self.prenet = Prenet(in_dim, sizes=list(prenet_sizes))
        self.cbhg = CBHG(
            prenet_sizes[-1], K=K, projections=[2 * prenet_sizes[-1], prenet_sizes[-1]]
        )

    def forward(self, inputs, input_lengths=None):
        inputs = self.prenet(inputs)
        return self.cbhg(inputs, input_lengths)


class TacotronEncoder(nn.Module):
    def __init__(self, n_vocab, embedding_dim=256, padding_idx=None, K=16, prenet_sizes=(256, 128)):
        super(TacotronEncoder, self).__init__()
        self.embedding = nn.Embedding(n_vocab, embedding_dim, padding_idx=padding_idx)
        # Trying smaller std
        self.embedding.weight.data.normal_(0, 0.3)
        self.encoder = Encoder(embedding_dim, prenet_sizes=prenet_sizes, K=K)

    def forward(self, inputs, input_lengths=None):
        return self.encoder(self.embedding(inputs), input_lengths)


@heldout(
    "tacotron_encoder",
    example=lambda: (
        (torch.randint(1, 40, (2, 23), generator=torch.Generator().manual_seed(0)),),
        {},
    ),
    edit=("encoder.prenet", {"dropout": 0.2}),
)
def tacotron_encoder() -> nn.Module:
    torch.manual_seed(0)
    return TacotronEncoder(40, embedding_dim=64, padding_idx=0, K=4, prenet_sizes=(64, 32))


# --- Conformer (Gulati et al. 2020), a lite rewrite ---------------------------------------------


class Swish(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x.sigmoid()


class Conv2dSubsampling(nn.Module):
    """Two stride-2 convs: T -> ~T/4, as in the ESPnet recipes."""

    def __init__(self, idim: int, odim: int, dropout_rate: float = 0.0) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(1, odim, 3, 2),
            nn.ReLU(),
            nn.Conv2d(odim, odim, 3, 2),
            nn.ReLU(),
        )
        self.out = nn.Sequential(
            nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim),
            nn.Dropout(dropout_rate),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x.unsqueeze(1))  # (b, c, t, f)
        b, c, t, f = x.size()
        return self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))


class FeedForwardModule(nn.Module):
    def __init__(self, dim: int, expansion_factor: int = 4, dropout: float = 0.1) -> None:
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(dim),
            nn.Linear(dim, dim * expansion_factor),
            Swish(),
            nn.Dropout(p=dropout),
            nn.Linear(dim * expansion_factor, dim),
            nn.Dropout(p=dropout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.sequential(x)


class ConvolutionModule(nn.Module):
    def __init__(
        self, dim: int, kernel_size: int = 31, expansion_factor: int = 2, dropout: float = 0.1
    ):
        super().__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
        inner = dim * expansion_factor
        self.layer_norm = nn.LayerNorm(dim)
        self.pointwise_conv1 = nn.Conv1d(dim, inner, kernel_size=1)
        self.glu = nn.GLU(dim=1)
        self.depthwise_conv = nn.Conv1d(
            inner // 2, inner // 2, kernel_size, padding=(kernel_size - 1) // 2, groups=inner // 2
        )
        self.batch_norm = nn.BatchNorm1d(inner // 2)
        self.swish = Swish()
        self.pointwise_conv2 = nn.Conv1d(inner // 2, dim, kernel_size=1)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer_norm(x).transpose(1, 2)
        x = self.glu(self.pointwise_conv1(x))
        x = self.swish(self.batch_norm(self.depthwise_conv(x)))
        x = self.dropout(self.pointwise_conv2(x))
        return x.transpose(1, 2)


class RelPositionMHSA(nn.Module):
    """Self-attention with an added sinusoidal position (a simplification of the paper's relative
    encoding, as many re-implementations do)."""

    def __init__(self, dim: int, num_heads: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0), persistent=False)
        self.layer_norm = nn.LayerNorm(dim)
        self.attention = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = self.layer_norm(x)
        q = x + self.pe[:, : x.size(1)]
        out, _ = self.attention(q, q, x, key_padding_mask=mask, need_weights=False)
        return self.dropout(out)


class ConformerBlock(nn.Module):
    def __init__(
        self,
        encoder_dim: int = 512,
        num_attention_heads: int = 8,
        feed_forward_expansion_factor: int = 4,
        conv_expansion_factor: int = 2,
        conv_kernel_size: int = 31,
        dropout: float = 0.1,
        half_step_residual: bool = True,
    ) -> None:
        super().__init__()
        self.feed_forward_residual_factor = 0.5 if half_step_residual else 1.0
        self.ff1 = FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout)
        self.mhsa = RelPositionMHSA(encoder_dim, num_attention_heads, dropout)
        self.conv_module = ConvolutionModule(
            encoder_dim, conv_kernel_size, conv_expansion_factor, dropout
        )
        self.ff2 = FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout)
        self.norm = nn.LayerNorm(encoder_dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.feed_forward_residual_factor * self.ff1(x)
        x = x + self.mhsa(x, mask)
        x = x + self.conv_module(x)
        x = x + self.feed_forward_residual_factor * self.ff2(x)
        return self.norm(x)


class Conformer(nn.Module):
    def __init__(
        self,
        num_classes: int,
        input_dim: int = 80,
        encoder_dim: int = 512,
        num_layers: int = 17,
        **block_kwargs,
    ):
        super().__init__()
        self.subsample = Conv2dSubsampling(input_dim, encoder_dim)
        self.layers = nn.ModuleList(
            [ConformerBlock(encoder_dim, **block_kwargs) for _ in range(num_layers)]
        )
        self.fc = nn.Linear(encoder_dim, num_classes, bias=False)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        x = self.subsample(inputs)
        for layer in self.layers:
            x = layer(x)
        return F.log_softmax(self.fc(x), dim=-1)


@heldout(
    "conformer_ctc",
    example=lambda: ((rand(2, 40, 40),), {}),
    edit=("layers.0.conv_module", {"kernel_size": 7}),
)
def conformer_ctc() -> nn.Module:
    torch.manual_seed(1)
    return Conformer(
        29, input_dim=40, encoder_dim=64, num_layers=2, num_attention_heads=4, conv_kernel_size=15
    )
