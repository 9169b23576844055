"""Music and rendering: a MusicVAE-lite, a WaveRNN-lite, a small NeRF."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class BiLSTMEncoder(nn.Module):
    def __init__(self, input_size, hidden_size, z_size, num_layers=1):
        super().__init__()
        self.lstm = nn.LSTM(
            input_size, hidden_size, num_layers, batch_first=True, bidirectional=True
        )
        self.mu = nn.Linear(2 * hidden_size, z_size)
        self.sigma = nn.Linear(2 * hidden_size, z_size)
        self.softplus = nn.Softplus()

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        h = torch.cat([h[-2], h[-1]], dim=-1)
        return self.mu(h), self.softplus(self.sigma(h))


class HierarchicalDecoder(nn.Module):
    """MusicVAE's conductor: one embedding per bar, each drives a bottom-level decoder."""

    def __init__(self, z_size, conductor_size, decoder_size, output_size, n_bars, steps_per_bar):
        super().__init__()
        self.n_bars, self.steps = n_bars, steps_per_bar
        self.fc_init = nn.Linear(z_size, 2 * conductor_size)
        self.conductor = nn.LSTMCell(z_size, conductor_size)
        self.bar_init = nn.Linear(conductor_size, decoder_size)
        self.decoder = nn.GRU(output_size + conductor_size, decoder_size, batch_first=True)
        self.out = nn.Linear(decoder_size, output_size)
        self.register_buffer("start_token", torch.zeros(1, 1, output_size))

    def forward(self, z, target):
        b = z.shape[0]
        h, c = torch.tanh(self.fc_init(z)).chunk(2, dim=-1)
        logits = []
        for bar in range(self.n_bars):
            h, c = self.conductor(z, (h, c))
            tgt = target[:, bar * self.steps : (bar + 1) * self.steps]
            prev = torch.cat([self.start_token.expand(b, 1, -1), tgt[:, :-1]], 1)  # teacher forcing
            inp = torch.cat([prev, h.unsqueeze(1).expand(-1, self.steps, -1)], -1)
            h0 = torch.tanh(self.bar_init(h)).unsqueeze(0)
            y, _ = self.decoder(inp, h0)
            logits.append(self.out(y))
        return torch.cat(logits, 1)


class MusicVAE(nn.Module):
    def __init__(self, hparams):
        super().__init__()
        self.encoder = BiLSTMEncoder(hparams["n_pitches"], **hparams["encoder"])
        dec = hparams["decoder"]
        self.decoder = HierarchicalDecoder(hparams["encoder"]["z_size"], dec["conductor"], dec["size"],
                                           hparams["n_pitches"], hparams["n_bars"], hparams["steps_per_bar"])  # fmt: skip

    def forward(self, x):
        mu, sigma = self.encoder(x)
        z = mu + sigma * torch.randn_like(sigma) if self.training else mu
        return self.decoder(z, x), mu, sigma


HPARAMS = {
    "n_pitches": 32,
    "n_bars": 2,
    "steps_per_bar": 8,
    "encoder": {"hidden_size": 64, "z_size": 32},
    "decoder": {"conductor": 48, "size": 64},
}


@heldout("musicvae_lite", example=lambda: ((rand(2, 16, 32),), {}),
         edit=("encoder", {"hidden_size": 32}))  # fmt: skip
def musicvae_lite():
    torch.manual_seed(30)
    return MusicVAE(HPARAMS)


# WaveRNN-lite: conditioning upsampled from a mel, a GRU over samples, a mixture of 2 fc heads


class ResBlock1d(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.conv1 = nn.Conv1d(dims, dims, kernel_size=1, bias=False)
        self.conv2 = nn.Conv1d(dims, dims, kernel_size=1, bias=False)
        self.batch_norm1 = nn.BatchNorm1d(dims)
        self.batch_norm2 = nn.BatchNorm1d(dims)

    def forward(self, x):
        residual = x
        x = F.relu(self.batch_norm1(self.conv1(x)))
        return self.batch_norm2(self.conv2(x)) + residual


class MelResNet(nn.Module):
    def __init__(self, res_blocks, in_dims, compute_dims, res_out_dims, pad):
        super().__init__()
        k_size = pad * 2 + 1
        self.conv_in = nn.Conv1d(in_dims, compute_dims, kernel_size=k_size, bias=False)
        self.batch_norm = nn.BatchNorm1d(compute_dims)
        self.layers = nn.ModuleList([ResBlock1d(compute_dims) for _ in range(res_blocks)])
        self.conv_out = nn.Conv1d(compute_dims, res_out_dims, kernel_size=1)

    def forward(self, x):
        x = F.relu(self.batch_norm(self.conv_in(x)))
        for f in self.layers:
            x = f(x)
        return self.conv_out(x)


class Stretch2d(nn.Module):
    def __init__(self, x_scale, y_scale):
        super().__init__()
        self.x_scale, self.y_scale = x_scale, y_scale

    def forward(self, x):
        b, c, h, w = x.size()
        x = x.unsqueeze(-1).unsqueeze(3)
        x = x.repeat(1, 1, 1, self.y_scale, 1, self.x_scale)
        return x.view(b, c, h * self.y_scale, w * self.x_scale)


class UpsampleNetwork(nn.Module):
    def __init__(self, feat_dims, upsample_scales, compute_dims, res_blocks, res_out_dims, pad):
        super().__init__()
        total_scale = math.prod(upsample_scales)
        self.indent = pad * total_scale
        self.resnet = MelResNet(res_blocks, feat_dims, compute_dims, res_out_dims, pad)
        self.resnet_stretch = Stretch2d(total_scale, 1)
        self.up_layers = nn.ModuleList()
        for scale in upsample_scales:
            k_size = (1, scale * 2 + 1)
            stretch = Stretch2d(scale, 1)
            conv = nn.Conv2d(1, 1, kernel_size=k_size, padding=(0, scale), bias=False)
            conv.weight.data.fill_(1.0 / k_size[1])
            self.up_layers.append(stretch)
            self.up_layers.append(conv)

    def forward(self, m):
        aux = self.resnet(m).unsqueeze(1)
        aux = self.resnet_stretch(aux).squeeze(1)
        m = m.unsqueeze(1)
        for f in self.up_layers:
            m = f(m)
        m = m.squeeze(1)[:, :, self.indent : -self.indent]
        return m.transpose(1, 2), aux.transpose(1, 2)


class WaveRNN(nn.Module):
    def __init__(self, rnn_dims, fc_dims, bits, pad, upsample_factors, feat_dims, compute_dims,
                 res_out_dims, res_blocks, mode="RAW"):  # fmt: skip
        super().__init__()
        self.mode = mode
        self.n_classes = 2**bits if mode == "RAW" else 30
        self.rnn_dims = rnn_dims
        self.aux_dims = res_out_dims // 4
        self.upsample = UpsampleNetwork(
            feat_dims, upsample_factors, compute_dims, res_blocks, res_out_dims, pad
        )
        self.I = nn.Linear(feat_dims + self.aux_dims + 1, rnn_dims)
        self.rnn1 = nn.GRU(rnn_dims, rnn_dims, batch_first=True)
        self.rnn2 = nn.GRU(rnn_dims + self.aux_dims, rnn_dims, batch_first=True)
        self.fc1 = nn.Linear(rnn_dims + self.aux_dims, fc_dims)
        self.fc2 = nn.Linear(fc_dims + self.aux_dims, fc_dims)
        self.fc3 = nn.Linear(fc_dims, self.n_classes)

    def forward(self, x, mels):
        mels, aux = self.upsample(mels)
        a = self.aux_dims
        a1, a2, a3, a4 = (aux[:, :, a * i : a * (i + 1)] for i in range(4))
        x = torch.cat([x.unsqueeze(-1), mels, a1[:, : mels.shape[1]]], dim=2)
        x = self.I(x)
        res = x
        x, _ = self.rnn1(x)
        x = x + res
        res = x
        x, _ = self.rnn2(torch.cat([x, a2[:, : x.shape[1]]], dim=2))
        x = x + res
        x = F.relu(self.fc1(torch.cat([x, a3[:, : x.shape[1]]], dim=2)))
        x = F.relu(self.fc2(torch.cat([x, a4[:, : x.shape[1]]], dim=2)))
        return self.fc3(x)


@heldout("wavernn_lite", example=lambda: ((rand(2, 64, seed=1), rand(2, 20, 12, seed=2)), {}))
def wavernn_lite():
    torch.manual_seed(31)
    # 12 mel frames, pad 2 each side -> 8 frames x 8 = 64 samples
    return WaveRNN(rnn_dims=64, fc_dims=64, bits=8, pad=2, upsample_factors=(2, 4), feat_dims=20,
                   compute_dims=32, res_out_dims=32, res_blocks=2)  # fmt: skip


# NeRF-lite: sinusoidal encoding (no hash grid), skip connection, view-dependent colour head


class PositionalEncoding(nn.Module):
    def __init__(self, num_freqs, include_input=True, log_sampling=True, input_dim=3):
        super().__init__()
        self.include_input = include_input
        if log_sampling:
            bands = 2.0 ** torch.linspace(0.0, num_freqs - 1, num_freqs)
        else:
            bands = torch.linspace(1.0, 2.0 ** (num_freqs - 1), num_freqs)
        self.register_buffer("freq_bands", bands, persistent=False)
        self.out_dim = input_dim * (int(include_input) + 2 * num_freqs)

    def forward(self, x):
        out = [x] if self.include_input else []
        for f in self.freq_bands:
            out += [torch.sin(x * f), torch.cos(x * f)]
        return torch.cat(out, -1)


class NeRF(nn.Module):
    def __init__(self, D=6, W=128, multires=6, multires_views=3, skips=(3,), use_viewdirs=True):
        super().__init__()
        self.embed_fn = PositionalEncoding(multires)
        self.embeddirs_fn = PositionalEncoding(multires_views) if use_viewdirs else None
        input_ch = self.embed_fn.out_dim
        input_ch_views = self.embeddirs_fn.out_dim if use_viewdirs else 0
        self.skips = list(skips)
        self.use_viewdirs = use_viewdirs
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [
                nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W)
                for i in range(D - 1)
            ]
        )
        if use_viewdirs:
            self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, 4)

    def forward(self, pts, viewdirs=None):
        input_pts = self.embed_fn(pts)
        h = input_pts
        for i, layer in enumerate(self.pts_linears):
            h = F.relu(layer(h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        if not self.use_viewdirs:
            return self.output_linear(h)
        alpha = self.alpha_linear(h)
        h = torch.cat([self.feature_linear(h), self.embeddirs_fn(viewdirs)], -1)
        for layer in self.views_linears:
            h = F.relu(layer(h))
        return torch.cat([torch.sigmoid(self.rgb_linear(h)), F.relu(alpha)], -1)


@heldout("nerf_lite", example=lambda: ((rand(256, 3, seed=3),), {"viewdirs": rand(256, 3, seed=4)}),
         edit=("embeddirs_fn", {"log_sampling": False}))  # fmt: skip
def nerf_lite():
    torch.manual_seed(32)
    return NeRF()
