"""Speech enhancement (a DCCRN-style complex U-Net, an RNNoise-like GRU suppressor), speaker
verification (ECAPA-TDNN, x-vectors), keyword spotting (res8) and voice activity detection
(a MarbleNet-like separable-conv classifier)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
import torch.nn.utils.parametrize as P
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------- DCCRN-lite


class ComplexConv2d(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size=(3, 3),
        stride=(2, 1),
        padding=(1, 1),
        transpose=False,
    ):
        super().__init__()
        conv = nn.ConvTranspose2d if transpose else nn.Conv2d
        self.real_conv = conv(in_channels, out_channels, kernel_size, stride, padding)
        self.imag_conv = conv(in_channels, out_channels, kernel_size, stride, padding)

    def forward(self, x):
        real, imag = torch.chunk(x, 2, dim=1)
        r2r, i2i = self.real_conv(real), self.imag_conv(imag)
        r2i, i2r = self.imag_conv(real), self.real_conv(imag)
        return torch.cat([r2r - i2i, r2i + i2r], dim=1)


class ComplexConvTranspose2d(ComplexConv2d):
    def __init__(
        self, in_channels, out_channels, kernel_size=(4, 3), stride=(2, 1), padding=(1, 1)
    ):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, transpose=True)


def complex_cat(inputs, axis=1):
    real, imag = [], []
    for data in inputs:
        r, i = torch.chunk(data, 2, axis)
        real.append(r)
        imag.append(i)
    return torch.cat([torch.cat(real, axis), torch.cat(imag, axis)], axis)


class NaiveComplexBatchNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn_re = nn.BatchNorm2d(num_features)
        self.bn_im = nn.BatchNorm2d(num_features)

    def forward(self, x):
        re, im = torch.chunk(x, 2, 1)
        return torch.cat([self.bn_re(re), self.bn_im(im)], 1)


class DCCRN(nn.Module):
    def __init__(self, rnn_units=32, win_len=64, hop=16, kernel_num=(8, 16, 16), masking="E"):
        super().__init__()
        self.win_len, self.hop = win_len, hop
        self.register_buffer("window", torch.hann_window(win_len), persistent=False)
        self.masking = masking
        chans = [1, *kernel_num]
        self.encoder = nn.ModuleList()
        self.decoder = nn.ModuleList()
        for idx in range(len(chans) - 1):
            self.encoder.append(
                nn.Sequential(
                    ComplexConv2d(chans[idx], chans[idx + 1]),
                    NaiveComplexBatchNorm(chans[idx + 1]),
                    nn.PReLU(),
                )
            )
        freq = win_len // 2
        for _ in kernel_num:
            freq = (freq - 1) // 2 + 1
        self.freq_bins = freq
        self.enhance = nn.LSTM(freq * chans[-1] * 2, rnn_units, num_layers=2, batch_first=True)
        self.tranform = nn.Linear(rnn_units, freq * chans[-1] * 2)
        for idx in range(len(chans) - 1, 0, -1):
            block = [ComplexConvTranspose2d(chans[idx] * 2, chans[idx - 1] if idx > 1 else 1)]
            if idx != 1:
                block += [NaiveComplexBatchNorm(chans[idx - 1]), nn.PReLU()]
            self.decoder.append(nn.Sequential(*block))

    def forward(self, wav):
        spec = torch.stft(wav, self.win_len, self.hop, window=self.window, return_complex=True)
        real, imag = spec.real[:, 1:], spec.imag[:, 1:]  # drop DC like the reference
        x = torch.stack([real, imag], 1)  # B, 2, F, T
        out = x
        skips = []
        for layer in self.encoder:
            out = layer(out)
            skips.append(out)
        B, C, D, T = out.shape
        r = out.permute(0, 3, 1, 2).reshape(B, T, C * D)
        r, _ = self.enhance(r)
        r = self.tranform(r).view(B, T, C, D).permute(0, 2, 3, 1)
        out = r
        for layer, skip in zip(self.decoder, reversed(skips)):
            out = layer(complex_cat([out, skip], 1))
        mask_real, mask_imag = out[:, 0], out[:, 1]
        if self.masking == "E":
            mag = torch.sqrt(real**2 + imag**2 + 1e-8)
            phase = torch.atan2(imag, real)
            mask_mag = torch.tanh(torch.sqrt(mask_real**2 + mask_imag**2 + 1e-8))
            mask_phase = torch.atan2(mask_imag, mask_real)
            est_mag, est_phase = mag * mask_mag, phase + mask_phase
            est_real, est_imag = est_mag * torch.cos(est_phase), est_mag * torch.sin(est_phase)
        else:
            est_real = real * mask_real - imag * mask_imag
            est_imag = real * mask_imag + imag * mask_real
        est = torch.complex(F.pad(est_real, [0, 0, 1, 0]), F.pad(est_imag, [0, 0, 1, 0]))
        return torch.istft(est, self.win_len, self.hop, window=self.window, length=wav.shape[-1])


@heldout("dccrn_complex_unet", lambda: ((rand(2, 1024),), {}))
def build_dccrn():
    return DCCRN(rnn_units=32, win_len=64, hop=16, kernel_num=(8, 16, 16), masking="E")


# ----------------------------------------------------------------------------- RNNoise


class WeightClip(nn.Module):
    def __init__(self, c=0.499):
        super().__init__()
        self.c = c

    def forward(self, w):
        return torch.clamp(w, -self.c, self.c)


def constrained(layer, c=0.499):
    for name in [n for n, _ in layer.named_parameters(recurse=False) if "weight" in n]:
        P.register_parametrization(layer, name, WeightClip(c))
    return layer


class RNNoise(nn.Module):
    NB_BANDS = 22
    NB_FEATURES = 42

    def __init__(self, vad_units=24, noise_units=48, denoise_units=96):
        super().__init__()
        self.input_dense = constrained(nn.Linear(self.NB_FEATURES, 24))
        self.vad_gru = constrained(nn.GRU(24, vad_units, batch_first=True))
        self.vad_output = nn.Linear(vad_units, 1)
        self.noise_gru = constrained(
            nn.GRU(24 + vad_units + self.NB_FEATURES, noise_units, batch_first=True)
        )
        self.denoise_gru = constrained(
            nn.GRU(vad_units + noise_units + self.NB_FEATURES, denoise_units, batch_first=True)
        )
        self.denoise_output = nn.Linear(denoise_units, self.NB_BANDS)

    def forward(self, features):
        tmp = torch.tanh(self.input_dense(features))
        vad_gru, _ = self.vad_gru(tmp)
        vad = torch.sigmoid(self.vad_output(vad_gru))
        noise_gru, _ = self.noise_gru(torch.cat([tmp, vad_gru, features], -1))
        denoise_gru, _ = self.denoise_gru(torch.cat([vad_gru, noise_gru, features], -1))
        gains = torch.sigmoid(self.denoise_output(denoise_gru))
        return gains, vad


@heldout("rnnoise_gru_suppressor", lambda: ((rand(2, 20, 42),), {}))
def build_rnnoise():
    return RNNoise(vad_units=16, noise_units=24, denoise_units=32)


# ----------------------------------------------------------------------------- ECAPA-TDNN


class Conv1dReluBn(nn.Module):
    def __init__(
        self, in_channels, out_channels, kernel_size=1, stride=1, padding=0, dilation=1, bias=True
    ):
        super().__init__()
        self.conv = nn.Conv1d(
            in_channels, out_channels, kernel_size, stride, padding, dilation, bias=bias
        )
        self.bn = nn.BatchNorm1d(out_channels)

    def forward(self, x):
        return self.bn(F.relu(self.conv(x)))


class Res2Conv1dReluBn(nn.Module):
    def __init__(
        self, channels, kernel_size=1, stride=1, padding=0, dilation=1, bias=True, scale=4
    ):
        super().__init__()
        assert channels % scale == 0, f"{channels} % {scale} != 0"
        self.scale = scale
        self.width = channels // scale
        self.nums = scale if scale == 1 else scale - 1
        self.convs = nn.ModuleList()
        self.bns = nn.ModuleList()
        for _ in range(self.nums):
            self.convs.append(
                nn.Conv1d(self.width, self.width, kernel_size, stride, padding, dilation, bias=bias)
            )
            self.bns.append(nn.BatchNorm1d(self.width))

    def forward(self, x):
        out = []
        spx = torch.split(x, self.width, 1)
        sp = spx[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            if i >= 1:
                sp = sp + spx[i]
            sp = bn(F.relu(conv(sp)))
            out.append(sp)
        if self.scale != 1:
            out.append(spx[self.nums])
        return torch.cat(out, dim=1)


class SE_Connect(nn.Module):
    def __init__(self, channels, se_bottleneck_dim=16):
        super().__init__()
        self.linear1 = nn.Linear(channels, se_bottleneck_dim)
        self.linear2 = nn.Linear(se_bottleneck_dim, channels)

    def forward(self, x):
        out = x.mean(dim=2)
        out = torch.sigmoid(self.linear2(F.relu(self.linear1(out))))
        return x * out.unsqueeze(2)


class SE_Res2Block(nn.Module):
    def __init__(self, channels, kernel_size, stride, padding, dilation, scale):
        super().__init__()
        self.block = nn.Sequential(
            Conv1dReluBn(channels, channels, kernel_size=1, stride=1, padding=0),
            Res2Conv1dReluBn(channels, kernel_size, stride, padding, dilation, scale=scale),
            Conv1dReluBn(channels, channels, kernel_size=1, stride=1, padding=0),
            SE_Connect(channels),
        )

    def forward(self, x):
        return x + self.block(x)


class AttentiveStatsPool(nn.Module):
    def __init__(self, in_dim, attention_channels=16, global_context_att=False):
        super().__init__()
        self.global_context_att = global_context_att
        in_att = in_dim * 3 if global_context_att else in_dim
        self.linear1 = nn.Conv1d(in_att, attention_channels, kernel_size=1)
        self.linear2 = nn.Conv1d(attention_channels, in_dim, kernel_size=1)

    def forward(self, x):
        if self.global_context_att:
            mean = torch.mean(x, dim=-1, keepdim=True).expand_as(x)
            std = torch.sqrt(torch.var(x, dim=-1, keepdim=True) + 1e-10).expand_as(x)
            x_in = torch.cat((x, mean, std), dim=1)
        else:
            x_in = x
        alpha = torch.softmax(self.linear2(torch.tanh(self.linear1(x_in))), dim=2)
        mean = torch.sum(alpha * x, dim=2)
        residuals = torch.sum(alpha * (x**2), dim=2) - mean**2
        std = torch.sqrt(residuals.clamp(min=1e-9))
        return torch.cat([mean, std], dim=1)


class ECAPA_TDNN(nn.Module):
    def __init__(self, feat_dim=40, channels=32, emb_dim=16, global_context_att=True):
        super().__init__()
        self.layer1 = Conv1dReluBn(feat_dim, channels, kernel_size=5, padding=2)
        self.layer2 = SE_Res2Block(
            channels, kernel_size=3, stride=1, padding=2, dilation=2, scale=4
        )
        self.layer3 = SE_Res2Block(
            channels, kernel_size=3, stride=1, padding=3, dilation=3, scale=4
        )
        self.layer4 = SE_Res2Block(
            channels, kernel_size=3, stride=1, padding=4, dilation=4, scale=4
        )
        cat_channels = channels * 3
        self.conv = nn.Conv1d(cat_channels, cat_channels, kernel_size=1)
        self.pooling = AttentiveStatsPool(
            cat_channels, attention_channels=16, global_context_att=global_context_att
        )
        self.bn1 = nn.BatchNorm1d(cat_channels * 2)
        self.linear = nn.Linear(cat_channels * 2, emb_dim)
        self.bn2 = nn.BatchNorm1d(emb_dim)

    def forward(self, x):
        out1 = self.layer1(x)
        out2 = self.layer2(out1)
        out3 = self.layer3(out2)
        out4 = self.layer4(out3)
        out = torch.cat([out2, out3, out4], dim=1)
        out = F.relu(self.conv(out))
        out = self.bn1(self.pooling(out))
        return self.bn2(self.linear(out))


@heldout(
    "ecapa_tdnn_speaker",
    lambda: ((rand(2, 40, 60),), {}),
    edit=("layer3", {"scale": 2, "dilation": 1, "padding": 1}),
)
def build_ecapa():
    return ECAPA_TDNN(feat_dim=40, channels=32, emb_dim=16)


# ----------------------------------------------------------------------------- x-vector


class TDNN(nn.Module):
    """A TDNN layer as unfold over a context window (the Kaldi-style frame splicing)."""

    def __init__(
        self,
        input_dim=23,
        output_dim=512,
        context_size=5,
        stride=1,
        dilation=1,
        batch_norm=True,
        dropout_p=0.0,
    ):
        super().__init__()
        self.context_size = context_size
        self.stride = stride
        self.input_dim = input_dim
        self.dilation = dilation
        self.dropout_p = dropout_p
        self.kernel = nn.Linear(input_dim * context_size, output_dim)
        self.nonlinearity = nn.ReLU()
        self.bn = nn.BatchNorm1d(output_dim) if batch_norm else None
        self.drop = nn.Dropout(p=dropout_p) if dropout_p else None

    def forward(self, x):
        _, _, d = x.shape
        assert d == self.input_dim, (
            f"Input dimension was wrong. Expected ({self.input_dim}), got ({d})"
        )
        x = x.unsqueeze(1)
        x = F.unfold(
            x,
            (self.context_size, self.input_dim),
            stride=(1, self.input_dim),
            dilation=(self.dilation, 1),
        )
        x = self.nonlinearity(self.kernel(x.transpose(1, 2)))
        if self.drop is not None:
            x = self.drop(x)
        if self.bn is not None:
            x = self.bn(x.transpose(1, 2)).transpose(1, 2)
        return x


class XVector(nn.Module):
    FRAME_LAYERS = [(5, 1), (3, 2), (3, 3), (1, 1), (1, 1)]

    def __init__(self, input_dim=24, hidden=32, stats_dim=64, embed_dim=16, num_classes=10):
        super().__init__()
        dims = [input_dim] + [hidden] * (len(self.FRAME_LAYERS) - 1) + [stats_dim]
        for i, (ctx, dil) in enumerate(self.FRAME_LAYERS):
            self.add_module(
                f"frame{i + 1}", TDNN(dims[i], dims[i + 1], context_size=ctx, dilation=dil)
            )
        self.segment6 = nn.Linear(stats_dim * 2, embed_dim)
        self.segment7 = nn.Linear(embed_dim, embed_dim)
        self.output = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        for i in range(len(self.FRAME_LAYERS)):
            x = getattr(self, f"frame{i + 1}")(x)
        stats = torch.cat([x.mean(dim=1), x.std(dim=1)], dim=1)
        xvec = self.segment6(stats)
        x = F.relu(self.segment7(F.relu(xvec)))
        return self.output(x), xvec


@heldout(
    "xvector_tdnn",
    lambda: ((rand(2, 50, 24),), {}),
    edit=("frame3", {"context_size": 5, "dropout_p": 0.1}),
)
def build_xvector():
    return XVector(input_dim=24, hidden=32, stats_dim=64, embed_dim=16, num_classes=10)


# ----------------------------------------------------------------------------- KWS res8


class Res8(nn.Module):
    def __init__(self, n_labels=12, n_maps=19, n_layers=6, res_pool=(4, 3), use_dilation=False):
        super().__init__()
        self.conv0 = nn.Conv2d(1, n_maps, (3, 3), padding=(1, 1), bias=False)
        self.pool = nn.AvgPool2d(res_pool) if res_pool else None
        self.n_layers = n_layers
        for i in range(n_layers):
            if use_dilation:
                d = int(2 ** (i // 3))
                conv = nn.Conv2d(n_maps, n_maps, (3, 3), padding=d, dilation=d, bias=False)
            else:
                conv = nn.Conv2d(n_maps, n_maps, (3, 3), padding=1, bias=False)
            self.add_module(f"bn{i + 1}", nn.BatchNorm2d(n_maps, affine=False))
            self.add_module(f"conv{i + 1}", conv)
        self.output = nn.Linear(n_maps, n_labels)

    def forward(self, x):
        x = x.unsqueeze(1)
        old_x = None
        for i in range(self.n_layers + 1):
            y = F.relu(getattr(self, f"conv{i}")(x))
            if i == 0:
                if self.pool is not None:
                    y = self.pool(y)
                old_x = y
            if i > 0 and i % 2 == 0:
                x = y + old_x
                old_x = x
            else:
                x = y
            if i > 0:
                x = getattr(self, f"bn{i}")(x)
        x = x.view(x.size(0), x.size(1), -1)
        return self.output(torch.mean(x, 2))


@heldout("res8_keyword_spotting", lambda: ((rand(2, 49, 20),), {}))
def build_res8():
    return Res8(n_labels=12, n_maps=19, n_layers=6, res_pool=(3, 2), use_dilation=True)


# ----------------------------------------------------------------------------- MarbleNet VAD


class SubBlock(nn.Module):
    def __init__(self, in_ch, out_ch, kernel, separable=True, dropout=0.0, activation=None):
        super().__init__()
        if separable:
            self.conv = nn.Sequential(
                nn.Conv1d(in_ch, in_ch, kernel, padding=kernel // 2, groups=in_ch, bias=False),
                nn.Conv1d(in_ch, out_ch, 1, bias=False),
            )
        else:
            self.conv = nn.Conv1d(in_ch, out_ch, kernel, padding=kernel // 2, bias=False)
        self.bn = nn.BatchNorm1d(out_ch, eps=1e-3)
        self.act = activation
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, residual=None):
        x = self.bn(self.conv(x))
        if residual is not None:
            x = x + residual
        return self.dropout(self.act(x))


class JasperBlock(nn.Module):
    def __init__(
        self,
        in_ch,
        out_ch,
        kernel,
        repeat=1,
        residual=True,
        separable=True,
        dropout=0.0,
        activation="relu",
    ):
        super().__init__()
        act = {"relu": nn.ReLU(), "selu": nn.SELU(), "hardtanh": nn.Hardtanh(0.0, 20.0)}[activation]
        subs = []
        ch = in_ch
        for _ in range(repeat):
            subs.append(SubBlock(ch, out_ch, kernel, separable, dropout, act))
            ch = out_ch
        self.mconv = nn.ModuleList(subs)
        self.res = (
            nn.Sequential(nn.Conv1d(in_ch, out_ch, 1, bias=False), nn.BatchNorm1d(out_ch, eps=1e-3))
            if residual
            else None
        )

    def forward(self, x):
        res = self.res(x) if self.res is not None else None
        out = x
        for i, sub in enumerate(self.mconv):
            out = sub(out, res if i == len(self.mconv) - 1 else None)
        return out


MARBLENET_3x2 = [
    {"filters": 16, "repeat": 1, "kernel": 11, "residual": False, "separable": True},
    {"filters": 16, "repeat": 2, "kernel": 13, "residual": True, "separable": True},
    {"filters": 16, "repeat": 2, "kernel": 15, "residual": True, "separable": True},
    {"filters": 16, "repeat": 2, "kernel": 17, "residual": True, "separable": True},
    {"filters": 32, "repeat": 1, "kernel": 29, "residual": False, "separable": True},
    {"filters": 32, "repeat": 1, "kernel": 1, "residual": False, "separable": False},
]


class MarbleNet(nn.Module):
    def __init__(self, feat_in, num_classes, jasper=MARBLENET_3x2, activation="relu", dropout=0.0):  # noqa: B006
        super().__init__()
        blocks = []
        ch = feat_in
        for cfg in jasper:
            blocks.append(
                JasperBlock(
                    ch,
                    cfg["filters"],
                    cfg["kernel"],
                    cfg["repeat"],
                    cfg["residual"],
                    cfg["separable"],
                    dropout,
                    activation,
                )
            )
            ch = cfg["filters"]
        self.encoder = nn.Sequential(*blocks)
        self.decoder = nn.Linear(ch, num_classes)

    def forward(self, audio_signal):
        enc = self.encoder(audio_signal)
        return self.decoder(F.adaptive_avg_pool1d(enc, 1).squeeze(-1))


@heldout(
    "marblenet_vad",
    lambda: ((rand(2, 32, 64),), {}),
)
def build_marblenet():
    return MarbleNet(feat_in=32, num_classes=2)
