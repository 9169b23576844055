"""Audio and speech models: a Conformer encoder, SincNet's parametrised band-pass front end, a
CRNN for sound event detection and a conditioned WaveNet."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# Conformer (Gulati et al. 2020): macaron feed-forwards, relative-free MHSA, a conv module with
# GLU and depthwise conv, conv2d subsampling in front.


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class FeedForwardModule(nn.Module):
    def __init__(self, encoder_dim=32, expansion_factor=4, dropout_p=0.1):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(encoder_dim),
            nn.Linear(encoder_dim, encoder_dim * expansion_factor, bias=True),
            Swish(),
            nn.Dropout(p=dropout_p),
            nn.Linear(encoder_dim * expansion_factor, encoder_dim, bias=True),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs):
        return self.sequential(inputs)


class ConformerConvModule(nn.Module):
    def __init__(self, in_channels, kernel_size=7, expansion_factor=2, dropout_p=0.1):
        super().__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be odd for 'SAME' padding"
        inner = in_channels * expansion_factor
        self.layer_norm = nn.LayerNorm(in_channels)
        self.pointwise1 = nn.Conv1d(in_channels, inner, 1)
        self.glu = nn.GLU(dim=1)
        self.depthwise = nn.Conv1d(inner // 2, inner // 2, kernel_size, groups=inner // 2,
                                   padding=(kernel_size - 1) // 2)  # fmt: skip
        self.batch_norm = nn.BatchNorm1d(inner // 2)
        self.swish = Swish()
        self.pointwise2 = nn.Conv1d(inner // 2, in_channels, 1)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, inputs):
        x = self.layer_norm(inputs).transpose(1, 2)
        x = self.glu(self.pointwise1(x))
        x = self.swish(self.batch_norm(self.depthwise(x)))
        return self.dropout(self.pointwise2(x)).transpose(1, 2)


class MultiHeadedSelfAttentionModule(nn.Module):
    def __init__(self, d_model, num_heads, dropout_p=0.1):
        super().__init__()
        self.layer_norm = nn.LayerNorm(d_model)
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, inputs, mask=None):
        B, T, D = inputs.shape
        qkv = self.qkv(self.layer_norm(inputs)).view(B, T, 3, self.num_heads, self.d_head)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        score = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
        if mask is not None:
            score = score.masked_fill(~mask[:, None, None, :], -1e9)
        ctx = (score.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        return self.dropout(self.out_proj(ctx))


class ResidualConnectionModule(nn.Module):
    def __init__(self, module, module_factor=1.0, input_factor=1.0):
        super().__init__()
        self.module = module
        self.module_factor = module_factor
        self.input_factor = input_factor

    def forward(self, inputs, *extra):
        return (self.module(inputs, *extra) * self.module_factor) + (inputs * self.input_factor)


class ConformerBlock(nn.Module):
    def __init__(self, encoder_dim=32, num_attention_heads=4, feed_forward_expansion_factor=4,
                 conv_expansion_factor=2, dropout=0.1, conv_kernel_size=7,
                 half_step_residual=True):  # fmt: skip
        super().__init__()
        ff_factor = 0.5 if half_step_residual else 1.0
        self.ff1 = ResidualConnectionModule(
            FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout), ff_factor
        )
        self.mhsa = ResidualConnectionModule(
            MultiHeadedSelfAttentionModule(encoder_dim, num_attention_heads, dropout)
        )
        self.conv = ResidualConnectionModule(
            ConformerConvModule(encoder_dim, conv_kernel_size, conv_expansion_factor, dropout)
        )
        self.ff2 = ResidualConnectionModule(
            FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout), ff_factor
        )
        self.norm = nn.LayerNorm(encoder_dim)

    def forward(self, x, mask=None):
        x = self.ff1(x)
        x = self.mhsa(x, mask)
        x = self.conv(x)
        return self.norm(self.ff2(x))


class Conv2dSubsampling(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
        )

    def forward(self, inputs, input_lengths):
        outputs = self.sequential(inputs.unsqueeze(1))
        b, c, t, f = outputs.size()
        outputs = outputs.permute(0, 2, 1, 3).contiguous().view(b, t, c * f)
        output_lengths = ((input_lengths - 1) // 2 - 1) // 2
        return outputs, output_lengths


class ConformerEncoder(nn.Module):
    def __init__(self, input_dim=40, encoder_dim=32, num_layers=2, num_classes=12, **block_kwargs):
        super().__init__()
        self.conv_subsample = Conv2dSubsampling(1, encoder_dim)
        sub_dim = encoder_dim * (((input_dim - 1) // 2 - 1) // 2)
        self.input_projection = nn.Sequential(
            nn.Linear(sub_dim, encoder_dim), nn.Dropout(p=block_kwargs.get("dropout", 0.1))
        )
        self.layers = nn.ModuleList(
            [ConformerBlock(encoder_dim=encoder_dim, **block_kwargs) for _ in range(num_layers)]
        )
        self.fc = nn.Linear(encoder_dim, num_classes, bias=False)

    def forward(self, inputs, input_lengths):
        x, lengths = self.conv_subsample(inputs, input_lengths)
        x = self.input_projection(x)
        mask = torch.arange(x.size(1))[None] < lengths[:, None]
        for layer in self.layers:
            x = layer(x, mask)
        return self.fc(x).log_softmax(-1), lengths


@heldout(
    "conformer_ctc",
    lambda: ((rand(2, 50, 40, seed=50), torch.tensor([50, 42])), {}),
    edit=("layers.0", {"conv_kernel_size": 5}),
)
def conformer_ctc():
    return ConformerEncoder(input_dim=40, encoder_dim=32, num_layers=2, num_attention_heads=4,
                            dropout=0.1, conv_kernel_size=7)  # fmt: skip


# --------------------------------------------------------------------------------------------
# SincNet (Ravanelli & Bengio 2018): band-pass filters parametrised by learnable cut-offs, a
# Hamming window buffer, then ordinary conv layers with layer norm.


class SincConv(nn.Module):
    @staticmethod
    def to_mel(hz):
        return 2595 * math.log10(1 + hz / 700)

    @staticmethod
    def to_hz(mel):
        return 700 * (10 ** (mel / 2595) - 1)

    def __init__(self, out_channels, kernel_size, sample_rate=16000, min_low_hz=50, min_band_hz=50):
        super().__init__()
        if kernel_size % 2 == 0:
            kernel_size = kernel_size + 1
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.sample_rate = sample_rate
        self.min_low_hz = min_low_hz
        self.min_band_hz = min_band_hz
        low_hz, high_hz = 30, sample_rate / 2 - (min_low_hz + min_band_hz)
        mel = torch.linspace(self.to_mel(low_hz), self.to_mel(high_hz), out_channels + 1)
        hz = 700 * (10 ** (mel / 2595) - 1)
        self.low_hz_ = nn.Parameter(hz[:-1].view(-1, 1))
        self.band_hz_ = nn.Parameter(torch.diff(hz).view(-1, 1))
        n_lin = torch.linspace(0, (kernel_size / 2) - 1, steps=kernel_size // 2)
        self.register_buffer("window_", 0.54 - 0.46 * torch.cos(2 * math.pi * n_lin / kernel_size))
        n = (kernel_size - 1) / 2.0
        self.register_buffer("n_", 2 * math.pi * torch.arange(-n, 0).view(1, -1) / sample_rate)

    def forward(self, waveforms):
        low = self.min_low_hz + torch.abs(self.low_hz_)
        high = torch.clamp(low + self.min_band_hz + torch.abs(self.band_hz_), self.min_low_hz,
                           self.sample_rate / 2)  # fmt: skip
        band = (high - low)[:, 0]
        f_times_t_low = low @ self.n_
        f_times_t_high = high @ self.n_
        band_pass_left = (
            (torch.sin(f_times_t_high) - torch.sin(f_times_t_low)) / (self.n_ / 2)
        ) * self.window_
        band_pass_center = 2 * band.view(-1, 1)
        band_pass_right = torch.flip(band_pass_left, dims=[1])
        band_pass = torch.cat([band_pass_left, band_pass_center, band_pass_right], dim=1)
        band_pass = band_pass / (2 * band[:, None])
        filters = band_pass.view(self.out_channels, 1, self.kernel_size)
        return F.conv1d(waveforms, filters, stride=1, padding=0)


class SincNet(nn.Module):
    def __init__(self, options):
        super().__init__()
        self.cnn_N_filt = options["cnn_N_filt"]
        self.cnn_len_filt = options["cnn_len_filt"]
        self.cnn_max_pool_len = options["cnn_max_pool_len"]
        act = {"relu": nn.ReLU, "leaky_relu": lambda: nn.LeakyReLU(0.2), "linear": nn.Identity}
        self.conv = nn.ModuleList()
        self.ln = nn.ModuleList()
        self.act = nn.ModuleList()
        current_input = options["input_dim"]
        for i, (n_filt, len_filt, pool) in enumerate(
            zip(self.cnn_N_filt, self.cnn_len_filt, self.cnn_max_pool_len)
        ):
            if i == 0:
                self.conv.append(SincConv(n_filt, len_filt, options["fs"]))
                in_ch = 1
            else:
                self.conv.append(nn.Conv1d(in_ch, n_filt, len_filt))
            current_input = (current_input - len_filt + 1 - (i == 0 and len_filt % 2 == 0)) // pool
            self.ln.append(nn.LayerNorm([n_filt, current_input]))
            self.act.append(act[options["cnn_act"][i]]())
            in_ch = n_filt
        self.out_dim = in_ch * current_input
        self.classifier = nn.Linear(self.out_dim, options["n_classes"])

    def forward(self, x):
        x = x.unsqueeze(1)
        for conv, ln, act, pool in zip(self.conv, self.ln, self.act, self.cnn_max_pool_len):
            h = conv(x)
            if isinstance(conv, SincConv):
                h = torch.abs(h)
            x = act(ln(F.max_pool1d(h, pool)))
        return self.classifier(x.flatten(1))


@heldout("sincnet", lambda: ((rand(2, 400, seed=51),), {}))
def sincnet():
    options = {
        "input_dim": 400,
        "fs": 8000,
        "cnn_N_filt": [16, 16, 16],
        "cnn_len_filt": [51, 5, 5],
        "cnn_max_pool_len": [3, 3, 3],
        "cnn_act": ["leaky_relu", "leaky_relu", "relu"],
        "n_classes": 8,
    }
    return SincNet(options)


# --------------------------------------------------------------------------------------------
# CRNN for sound event detection (Cakir et al. 2017): conv blocks that pool frequency only, a
# bidirectional GRU, frame-wise sigmoid outputs and attention pooling to clip level.


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, pool_size=(1, 2), dropout=0.0, norm="batch"):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=norm != "batch")
        self.norm = {"batch": nn.BatchNorm2d, "instance": nn.InstanceNorm2d}[norm](out_channels)
        self.pool = nn.MaxPool2d(pool_size)
        self.dropout = nn.Dropout2d(dropout) if dropout > 0 else None

    def forward(self, x):
        x = self.pool(F.relu(self.norm(self.conv(x))))
        return x if self.dropout is None else self.dropout(x)


class AttentionPool(nn.Module):
    def __init__(self, n_in, n_classes):
        super().__init__()
        self.att = nn.Linear(n_in, n_classes)
        self.cla = nn.Linear(n_in, n_classes)

    def forward(self, x):
        w = torch.softmax(torch.clamp(self.att(x), -10, 10), dim=1)
        frame = torch.sigmoid(self.cla(x))
        return (w * frame).sum(1), frame


class CRNN(nn.Module):
    def __init__(self, n_mels=32, n_classes=6, channels=(8, 16, 16), rnn_hidden=24, dropout=0.1,
                 **block_kwargs):  # fmt: skip
        super().__init__()
        blocks, cin = [], 1
        for c in channels:
            blocks.append(ConvBlock(cin, c, dropout=dropout, **block_kwargs))
            cin = c
        self.cnn = nn.Sequential(*blocks)
        freq = n_mels // (2 ** len(channels))
        self.rnn = nn.GRU(cin * freq, rnn_hidden, batch_first=True, bidirectional=True)
        self.pool = AttentionPool(2 * rnn_hidden, n_classes)

    def forward(self, spec):
        x = self.cnn(spec.unsqueeze(1))
        b, c, t, f = x.shape
        x, _ = self.rnn(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
        clip, frame = self.pool(x)
        return {"clip": clip, "frame": frame}


@heldout("crnn_sed", lambda: ((rand(2, 20, 32, seed=52),), {}))
def crnn_sed():
    return CRNN(n_mels=32, channels=[8, 16, 16], norm="batch")


# --------------------------------------------------------------------------------------------
# WaveNet (van den Oord et al. 2016): gated dilated causal convs, global conditioning on a
# speaker embedding, residual and skip paths, dilation cycles.


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
        self._pad = (kernel_size - 1) * dilation
        super().__init__(in_channels, out_channels, kernel_size, padding=self._pad,
                         dilation=dilation, **kwargs)  # fmt: skip

    def forward(self, x):
        out = super().forward(x)
        return out[:, :, : -self._pad] if self._pad else out


class GatedResidualLayer(nn.Module):
    def __init__(self, residual_channels, gate_channels, skip_channels, kernel_size, dilation,
                 gin_channels=None):  # fmt: skip
        super().__init__()
        self.conv = CausalConv1d(residual_channels, gate_channels, kernel_size, dilation)
        self.conv_g = nn.Linear(gin_channels, gate_channels, bias=False) if gin_channels else None
        half = gate_channels // 2
        self.res = nn.Conv1d(half, residual_channels, 1)
        self.skip = nn.Conv1d(half, skip_channels, 1)

    def forward(self, x, g=None):
        h = self.conv(x)
        if self.conv_g is not None and g is not None:
            h = h + self.conv_g(g).unsqueeze(-1)
        a, b = h.chunk(2, dim=1)
        z = torch.tanh(a) * torch.sigmoid(b)
        return (x + self.res(z)) * math.sqrt(0.5), self.skip(z)


class WaveNet(nn.Module):
    def __init__(self, out_channels=32, layers=6, stacks=2, residual_channels=16,
                 gate_channels=32, skip_channels=16, kernel_size=2, n_speakers=4,
                 gin_channels=8):  # fmt: skip
        super().__init__()
        assert layers % stacks == 0
        layers_per_stack = layers // stacks
        self.first_conv = nn.Conv1d(out_channels, residual_channels, 1)
        self.embed_speakers = nn.Embedding(n_speakers, gin_channels, padding_idx=None)
        self.conv_layers = nn.ModuleList()
        for layer in range(layers):
            dilation = 2 ** (layer % layers_per_stack)
            self.conv_layers.append(
                GatedResidualLayer(residual_channels, gate_channels, skip_channels, kernel_size,
                                   dilation, gin_channels=gin_channels)
            )  # fmt: skip
        self.last_conv_layers = nn.Sequential(
            nn.ReLU(inplace=True),
            nn.Conv1d(skip_channels, skip_channels, 1),
            nn.ReLU(inplace=True),
            nn.Conv1d(skip_channels, out_channels, 1),
        )
        self.receptive_field = (kernel_size - 1) * sum(
            2**i for i in range(layers_per_stack)
        ) * stacks + 1

    def forward(self, x, speaker_ids):
        g = self.embed_speakers(speaker_ids)
        x = self.first_conv(x)
        skips = 0
        for f in self.conv_layers:
            x, h = f(x, g)
            skips = skips + h
        skips = skips * math.sqrt(1.0 / len(self.conv_layers))
        return F.log_softmax(self.last_conv_layers(skips), dim=1)


def _wavenet_inputs():
    g = torch.Generator().manual_seed(53)
    q = torch.randint(0, 32, (2, 30), generator=g)
    return (F.one_hot(q, 32).transpose(1, 2).float(), torch.tensor([1, 3])), {}


@heldout("wavenet_gc", _wavenet_inputs)
def wavenet_gc():
    return WaveNet()
