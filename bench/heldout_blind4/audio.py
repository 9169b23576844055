"""Neural audio codecs and vocoders: a SoundStream/EnCodec-style codec and HiFi-GAN.

Causal convolutions as subclasses of nn.Conv1d with their own padding logic, weight-normed layers,
strides from a ratio list, a residual vector quantizer whose codebooks are EMA buffers, HiFi-GAN's
multi-receptive-field fusion driven by an AttrDict config, and its period discriminator with
spectral norm.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import spectral_norm, weight_norm

from .spec import heldout, rand

LRELU_SLOPE = 0.1

# --------------------------------------------------------------------------- SoundStream / EnCodec


class CausalConv1d(nn.Conv1d):
    def __init__(self, *args, pad_mode="reflect", **kwargs):
        super().__init__(*args, **kwargs)
        self.pad_mode = pad_mode
        self.causal_padding = self.dilation[0] * (self.kernel_size[0] - 1) + 1 - self.stride[0]

    def forward(self, x):
        x = F.pad(x, (self.causal_padding, 0), mode=self.pad_mode)
        return super().forward(x)


class CausalConvTranspose1d(nn.ConvTranspose1d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.upsample_factor = self.stride[0]

    def forward(self, x):
        n = x.shape[-1]
        out = super().forward(x)
        return out[..., : n * self.upsample_factor]


class ResidualUnit(nn.Module):
    def __init__(self, chan_in, chan_out, dilation, kernel_size=7, pad_mode="reflect"):
        super().__init__()
        self.net = nn.Sequential(
            CausalConv1d(chan_in, chan_out, kernel_size, dilation=dilation, pad_mode=pad_mode),
            nn.ELU(),
            CausalConv1d(chan_out, chan_out, 1, pad_mode=pad_mode),
            nn.ELU(),
        )

    def forward(self, x):
        return self.net(x) + x


def EncoderBlock(chan_in, chan_out, stride, cycle_dilations=(1, 3, 9), pad_mode="reflect"):
    it = iter(cycle_dilations)
    return nn.Sequential(
        ResidualUnit(chan_in, chan_in, next(it), pad_mode=pad_mode),
        ResidualUnit(chan_in, chan_in, next(it), pad_mode=pad_mode),
        ResidualUnit(chan_in, chan_in, next(it), pad_mode=pad_mode),
        CausalConv1d(chan_in, chan_out, 2 * stride, stride=stride, pad_mode=pad_mode),
    )


def DecoderBlock(chan_in, chan_out, stride, cycle_dilations=(1, 3, 9), pad_mode="reflect"):
    even = stride % 2 == 0
    return nn.Sequential(
        CausalConvTranspose1d(
            chan_in, chan_out, 2 * stride, stride=stride, padding=(stride // 2 if even else 0)
        ),
        *[ResidualUnit(chan_out, chan_out, d, pad_mode=pad_mode) for d in cycle_dilations],
    )


class VectorQuantize(nn.Module):
    """Euclidean codebook updated by exponential moving averages (buffers, not parameters)."""

    def __init__(self, dim, codebook_size, decay=0.99, eps=1e-5, commitment_weight=1.0):
        super().__init__()
        self.decay, self.eps, self.commitment_weight = decay, eps, commitment_weight
        embed = torch.randn(codebook_size, dim)
        self.register_buffer("embed", embed)
        self.register_buffer("embed_avg", embed.clone())
        self.register_buffer("cluster_size", torch.zeros(codebook_size))
        self.register_buffer("initted", torch.tensor([True]))

    def forward(self, x):  # (B, N, D)
        flat = x.reshape(-1, x.shape[-1])
        dist = (
            flat.pow(2).sum(1, keepdim=True)
            - 2 * flat @ self.embed.t()
            + self.embed.pow(2).sum(1)[None]
        )
        ind = dist.argmin(dim=-1)
        quantize = F.embedding(ind, self.embed).view_as(x)
        if self.training:
            onehot = F.one_hot(ind, self.embed.shape[0]).type(flat.dtype)
            self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
            self.embed_avg.mul_(self.decay).add_(onehot.t() @ flat.detach(), alpha=1 - self.decay)
            n = self.cluster_size.sum()
            smoothed = (self.cluster_size + self.eps) / (n + self.embed.shape[0] * self.eps) * n
            self.embed.copy_(self.embed_avg / smoothed.unsqueeze(1))
        loss = F.mse_loss(quantize.detach(), x) * self.commitment_weight
        quantize = x + (quantize - x).detach()
        return quantize, ind.view(x.shape[:-1]), loss


class ResidualVQ(nn.Module):
    def __init__(self, *, num_quantizers, **kwargs):
        super().__init__()
        self.layers = nn.ModuleList([VectorQuantize(**kwargs) for _ in range(num_quantizers)])

    def forward(self, x):
        quantized_out = torch.zeros_like(x)
        residual = x
        all_indices, all_losses = [], []
        for layer in self.layers:
            quantized, indices, loss = layer(residual)
            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized
            all_indices.append(indices)
            all_losses.append(loss)
        return quantized_out, torch.stack(all_indices, dim=-1), torch.stack(all_losses)


class SoundStream(nn.Module):
    def __init__(self, *, channels=32, strides=(2, 4, 5, 8), channel_mults=(2, 4, 8, 16), codebook_dim=512,
                 codebook_size=1024, rq_num_quantizers=8, input_channels=1, enc_cycle_dilations=(1, 3, 9),
                 dec_cycle_dilations=(1, 3, 9), pad_mode="reflect"):  # fmt: skip
        super().__init__()
        layer_channels = tuple(channels * m for m in channel_mults)
        chan_in_out = list(zip((channels, *layer_channels), layer_channels))
        enc = [CausalConv1d(input_channels, channels, 7, pad_mode=pad_mode)]
        for (ci, co), s in zip(chan_in_out, strides):
            enc.append(EncoderBlock(ci, co, s, enc_cycle_dilations, pad_mode))
        enc.append(CausalConv1d(layer_channels[-1], codebook_dim, 3, pad_mode=pad_mode))
        self.encoder = nn.Sequential(*enc)
        self.rq = ResidualVQ(
            num_quantizers=rq_num_quantizers, dim=codebook_dim, codebook_size=codebook_size
        )
        dec = [CausalConv1d(codebook_dim, layer_channels[-1], 7, pad_mode=pad_mode)]
        for (co, ci), s in zip(reversed(chan_in_out), reversed(strides)):
            dec.append(DecoderBlock(ci, co, s, dec_cycle_dilations, pad_mode))
        dec.append(CausalConv1d(channels, input_channels, 7, pad_mode=pad_mode))
        self.decoder = nn.Sequential(*dec)

    def forward(self, wav):
        z = self.encoder(wav.unsqueeze(1)).transpose(1, 2)
        q, codes, commit = self.rq(z)
        return self.decoder(q.transpose(1, 2)).squeeze(1), codes, commit.sum()


@heldout(
    "soundstream_rvq",
    lambda: ((rand(2, 640),), {}),
    edit=("rq", {"num_quantizers": 2}),
)
def soundstream_rvq():
    return SoundStream(channels=4, strides=(2, 4, 5), channel_mults=(2, 4, 8), codebook_dim=32, codebook_size=64,
                       rq_num_quantizers=4)  # fmt: skip


# --------------------------------------------------------------------------- HiFi-GAN


class AttrDict(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.__dict__ = self


def init_weights(m, mean=0.0, std=0.01):
    if m.__class__.__name__.find("Conv") != -1:
        m.weight.data.normal_(mean, std)


def get_padding(kernel_size, dilation=1):
    return int((kernel_size * dilation - dilation) / 2)


class ResBlock1(nn.Module):
    def __init__(self, h, channels, kernel_size=3, dilation=(1, 3, 5)):
        super().__init__()
        self.h = h
        self.convs1 = nn.ModuleList(
            [
                weight_norm(
                    nn.Conv1d(
                        channels,
                        channels,
                        kernel_size,
                        1,
                        dilation=d,
                        padding=get_padding(kernel_size, d),
                    )
                )
                for d in dilation
            ]  # fmt: skip
        )
        self.convs1.apply(init_weights)
        self.convs2 = nn.ModuleList(
            [
                weight_norm(
                    nn.Conv1d(
                        channels,
                        channels,
                        kernel_size,
                        1,
                        dilation=1,
                        padding=get_padding(kernel_size, 1),
                    )
                )
                for _ in dilation
            ]  # fmt: skip
        )
        self.convs2.apply(init_weights)

    def forward(self, x):
        for c1, c2 in zip(self.convs1, self.convs2):
            xt = c2(F.leaky_relu(c1(F.leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE))
            x = xt + x
        return x


class ResBlock2(nn.Module):
    def __init__(self, h, channels, kernel_size=3, dilation=(1, 3)):
        super().__init__()
        self.h = h
        self.convs = nn.ModuleList(
            [
                weight_norm(
                    nn.Conv1d(
                        channels,
                        channels,
                        kernel_size,
                        1,
                        dilation=d,
                        padding=get_padding(kernel_size, d),
                    )
                )
                for d in dilation
            ]  # fmt: skip
        )
        self.convs.apply(init_weights)

    def forward(self, x):
        for c in self.convs:
            x = c(F.leaky_relu(x, LRELU_SLOPE)) + x
        return x


class Generator(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.h = h
        self.num_kernels = len(h.resblock_kernel_sizes)
        self.num_upsamples = len(h.upsample_rates)
        self.conv_pre = weight_norm(
            nn.Conv1d(h.num_mels, h.upsample_initial_channel, 7, 1, padding=3)
        )
        resblock = ResBlock1 if h.resblock == "1" else ResBlock2
        self.ups = nn.ModuleList()
        for i, (u, k) in enumerate(zip(h.upsample_rates, h.upsample_kernel_sizes)):
            self.ups.append(
                weight_norm(
                    nn.ConvTranspose1d(
                        h.upsample_initial_channel // (2**i),
                        h.upsample_initial_channel // (2 ** (i + 1)),
                        k,
                        u,
                        padding=(k - u) // 2,
                    )  # fmt: skip
                )
            )
        self.resblocks = nn.ModuleList()
        for i in range(len(self.ups)):
            ch = h.upsample_initial_channel // (2 ** (i + 1))
            for k, d in zip(h.resblock_kernel_sizes, h.resblock_dilation_sizes):
                self.resblocks.append(resblock(h, ch, k, d))
        self.conv_post = weight_norm(nn.Conv1d(ch, 1, 7, 1, padding=3))
        self.ups.apply(init_weights)
        self.conv_post.apply(init_weights)

    def forward(self, x):
        x = self.conv_pre(x)
        for i in range(self.num_upsamples):
            x = self.ups[i](F.leaky_relu(x, LRELU_SLOPE))
            xs = None
            for j in range(self.num_kernels):
                r = self.resblocks[i * self.num_kernels + j](x)
                xs = r if xs is None else xs + r
            x = xs / self.num_kernels
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


HIFI_CONFIG = {
    "resblock": "1",
    "num_mels": 20,
    "upsample_rates": [4, 4, 2],
    "upsample_kernel_sizes": [8, 8, 4],
    "upsample_initial_channel": 64,
    "resblock_kernel_sizes": [3, 7],
    "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5]],
}


@heldout("hifigan_generator", lambda: ((rand(1, 20, 12),), {}))
def hifigan_generator():
    return Generator(AttrDict(HIFI_CONFIG))


class DiscriminatorP(nn.Module):
    def __init__(
        self,
        period,
        kernel_size=5,
        stride=3,
        use_spectral_norm=False,
        channels=(32, 128, 512, 1024),
    ):
        super().__init__()
        self.period = period
        norm_f = spectral_norm if use_spectral_norm else weight_norm
        chans = (1, *channels)
        self.convs = nn.ModuleList(
            [
                norm_f(
                    nn.Conv2d(
                        chans[i],
                        chans[i + 1],
                        (kernel_size, 1),
                        (stride, 1),
                        padding=(get_padding(5, 1), 0),
                    )
                )
                for i in range(len(channels))
            ]  # fmt: skip
        )
        self.convs.append(
            norm_f(nn.Conv2d(chans[-1], chans[-1], (kernel_size, 1), 1, padding=(2, 0)))
        )
        self.conv_post = norm_f(nn.Conv2d(chans[-1], 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x):
        fmap = []
        b, c, t = x.shape
        if t % self.period != 0:
            n_pad = self.period - (t % self.period)
            x = F.pad(x, (0, n_pad), "reflect")
            t = t + n_pad
        x = x.view(b, c, t // self.period, self.period)
        for layer in self.convs:
            x = F.leaky_relu(layer(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class MultiPeriodDiscriminator(nn.Module):
    def __init__(self, periods=(2, 3, 5, 7, 11), **kwargs):
        super().__init__()
        self.discriminators = nn.ModuleList([DiscriminatorP(p, **kwargs) for p in periods])

    def forward(self, y, y_hat):
        y_d_rs, y_d_gs, fmap_rs, fmap_gs = [], [], [], []
        for d in self.discriminators:
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


@heldout("hifigan_mpd", lambda: ((rand(2, 1, 400), rand(2, 1, 400, seed=1)), {}), train=True)
def hifigan_mpd():
    return MultiPeriodDiscriminator(
        periods=(2, 3, 5), use_spectral_norm=True, channels=(8, 16, 32, 32)
    )
