"""GANs and style transfer: a StyleGAN2 generator (mapping net, modulated convs), a CycleGAN
ResNet generator with a PatchGAN discriminator, a SPADE generator, AdaIN style transfer."""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

from .spec import heldout, rand

# --------------------------------------------------------------------------- StyleGAN2


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input**2, dim=1, keepdim=True) + 1e-8)


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0, lr_mul=1, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        bias = None if self.bias is None else self.bias * self.lr_mul
        out = F.linear(input, self.weight * self.scale, bias=bias)
        return F.leaky_relu(out, 0.2) * math.sqrt(2) if self.activation else out


class MappingNetwork(nn.Module):
    def __init__(self, style_dim, n_mlp, lr_mlp=0.01):
        super().__init__()
        layers = [PixelNorm()]
        for _ in range(n_mlp):
            layers.append(
                EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu")
            )
        self.style = nn.Sequential(*layers)

    def forward(self, z):
        return self.style(z)


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True,
                 upsample=False):  # fmt: skip
        super().__init__()
        self.eps, self.kernel_size = 1e-8, kernel_size
        self.in_channel, self.out_channel = in_channel, out_channel
        self.upsample, self.demodulate = upsample, demodulate
        self.scale = 1 / math.sqrt(in_channel * kernel_size**2)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(
            torch.randn(1, out_channel, in_channel, kernel_size, kernel_size)
        )
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(
            batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size
        )
        if self.upsample:
            input = F.interpolate(input, scale_factor=2, mode="bilinear", align_corners=False)
            height, width = height * 2, width * 2
        input = input.view(1, batch * in_channel, height, width)
        out = F.conv2d(input, weight, padding=self.padding, groups=batch)
        return out.view(batch, self.out_channel, height, width)


class NoiseInjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = image.new_empty(batch, 1, height, width).normal_()
        return image + self.weight * noise


class StyledConv(nn.Module):
    def __init__(
        self, in_channel, out_channel, kernel_size, style_dim, upsample=False, demodulate=True
    ):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim,
                                    demodulate=demodulate, upsample=upsample)  # fmt: skip
        self.noise = NoiseInjection()
        self.bias = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input, style, noise=None):
        out = self.noise(self.conv(input, style), noise=noise)
        return F.leaky_relu(out + self.bias, 0.2) * math.sqrt(2)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        self.upsample = upsample
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style) + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_mlp, channel_multiplier=2, lr_mlp=0.01):
        super().__init__()
        self.size, self.style_dim = size, style_dim
        self.mapping = MappingNetwork(style_dim, n_mlp, lr_mlp)
        self.channels = {4: 64, 8: 64, 16: 32 * channel_multiplier, 32: 16 * channel_multiplier}
        self.input = nn.Parameter(torch.randn(1, self.channels[4], 4, 4))
        self.conv1 = StyledConv(self.channels[4], self.channels[4], 3, style_dim)
        self.to_rgb1 = ToRGB(self.channels[4], style_dim, upsample=False)
        self.log_size = int(math.log(size, 2))
        self.num_layers = (self.log_size - 2) * 2 + 1
        self.convs, self.to_rgbs = nn.ModuleList(), nn.ModuleList()
        self.noises = nn.Module()
        for layer_idx in range(self.num_layers):
            res = (layer_idx + 5) // 2
            self.noises.register_buffer(
                f"noise_{layer_idx}",
                torch.randn(
                    1, 1, 2**res, 2**res, generator=torch.Generator().manual_seed(layer_idx)
                ),
            )
        in_channel = self.channels[4]
        for i in range(3, self.log_size + 1):
            out_channel = self.channels[2**i]
            self.convs.append(StyledConv(in_channel, out_channel, 3, style_dim, upsample=True))
            self.convs.append(StyledConv(out_channel, out_channel, 3, style_dim))
            self.to_rgbs.append(ToRGB(out_channel, style_dim))
            in_channel = out_channel
        self.n_latent = self.log_size * 2 - 2

    def forward(self, styles, truncation=1.0, truncation_latent=None, input_is_latent=False):
        latent = styles if input_is_latent else self.mapping(styles)
        if truncation < 1 and truncation_latent is not None:
            latent = truncation_latent + truncation * (latent - truncation_latent)
        latent = latent.unsqueeze(1).repeat(1, self.n_latent, 1)
        noise = [getattr(self.noises, f"noise_{i}") for i in range(self.num_layers)]
        out = self.input.repeat(latent.shape[0], 1, 1, 1)
        out = self.conv1(out, latent[:, 0], noise=noise[0])
        skip = self.to_rgb1(out, latent[:, 1])
        i = 1
        for conv1, conv2, noise1, noise2, to_rgb in zip(
            self.convs[::2], self.convs[1::2], noise[1::2], noise[2::2], self.to_rgbs
        ):
            out = conv1(out, latent[:, i], noise=noise1)
            out = conv2(out, latent[:, i + 1], noise=noise2)
            skip = to_rgb(out, latent[:, i + 2], skip)
            i += 2
        return skip, latent


@heldout(
    "stylegan2_generator",
    lambda: ((rand(2, 64),), {"truncation": 0.7, "truncation_latent": rand(1, 64, seed=1)}),
    edit=("mapping", {"n_mlp": 2}),
)
def stylegan2_generator():
    return Generator(32, 64, n_mlp=4, channel_multiplier=1)


# --------------------------------------------------------------------------- CycleGAN / PatchGAN


def get_norm_layer(norm_type="instance"):
    if norm_type == "batch":
        return functools.partial(nn.BatchNorm2d, affine=True, track_running_stats=True)
    if norm_type == "instance":
        return functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    if norm_type == "none":
        return lambda x: nn.Identity()
    raise NotImplementedError(f"normalization layer [{norm_type}] is not found")


class ResnetBlock(nn.Module):
    def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        super().__init__()
        self.conv_block = self.build_conv_block(
            dim, padding_type, norm_layer, use_dropout, use_bias
        )

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        conv_block = []
        for k in range(2):
            p = 0
            if padding_type == "reflect":
                conv_block += [nn.ReflectionPad2d(1)]
            elif padding_type == "replicate":
                conv_block += [nn.ReplicationPad2d(1)]
            elif padding_type == "zero":
                p = 1
            else:
                raise NotImplementedError(f"padding [{padding_type}] is not implemented")
            conv_block += [
                nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias),
                norm_layer(dim),
            ]
            if k == 0:
                conv_block += [nn.ReLU(True)] + ([nn.Dropout(0.5)] if use_dropout else [])
        return nn.Sequential(*conv_block)

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=64, norm_layer=nn.BatchNorm2d, use_dropout=False,
                 n_blocks=6, padding_type="reflect"):  # fmt: skip
        assert n_blocks >= 0
        super().__init__()
        if type(norm_layer) is functools.partial:
            use_bias = norm_layer.func == nn.InstanceNorm2d
        else:
            use_bias = norm_layer == nn.InstanceNorm2d
        model = [nn.ReflectionPad2d(3), nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0, bias=use_bias),
                 norm_layer(ngf), nn.ReLU(True)]  # fmt: skip
        n_downsampling = 2
        for i in range(n_downsampling):
            mult = 2**i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                      norm_layer(ngf * mult * 2), nn.ReLU(True)]  # fmt: skip
        mult = 2**n_downsampling
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                  use_dropout=use_dropout, use_bias=use_bias)]  # fmt: skip
        for i in range(n_downsampling):
            mult = 2 ** (n_downsampling - i)
            model += [nn.ConvTranspose2d(ngf * mult, int(ngf * mult / 2), kernel_size=3, stride=2,
                                         padding=1, output_padding=1, bias=use_bias),
                      norm_layer(int(ngf * mult / 2)), nn.ReLU(True)]  # fmt: skip
        model += [
            nn.ReflectionPad2d(3),
            nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0),
            nn.Tanh(),
        ]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=64, n_layers=3, norm_layer=nn.BatchNorm2d, use_sn=False):
        super().__init__()
        use_bias = getattr(norm_layer, "func", norm_layer) == nn.InstanceNorm2d
        sn = spectral_norm if use_sn else (lambda m: m)
        kw, padw = 4, 1
        sequence = [sn(nn.Conv2d(input_nc, ndf, kw, 2, padw)), nn.LeakyReLU(0.2, True)]
        nf_mult = 1
        for n in range(1, n_layers + 1):
            nf_mult_prev, nf_mult = nf_mult, min(2**n, 8)
            stride = 2 if n < n_layers else 1
            sequence += [
                sn(nn.Conv2d(ndf * nf_mult_prev, ndf * nf_mult, kw, stride, padw, bias=use_bias)),
                norm_layer(ndf * nf_mult),
                nn.LeakyReLU(0.2, True),
            ]
        sequence += [sn(nn.Conv2d(ndf * nf_mult, 1, kernel_size=kw, stride=1, padding=padw))]
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class CycleGAN(nn.Module):
    """Both generators and both discriminators; forward runs one cycle A -> B -> A."""

    def __init__(self, opt: dict):
        super().__init__()
        norm = get_norm_layer(opt.get("norm", "instance"))
        g_kw = dict(ngf=opt["ngf"], norm_layer=norm, use_dropout=not opt.get("no_dropout", True),
                    n_blocks=opt["n_blocks"])  # fmt: skip
        self.netG_A = ResnetGenerator(opt["input_nc"], opt["output_nc"], **g_kw)
        self.netG_B = ResnetGenerator(opt["output_nc"], opt["input_nc"], **g_kw)
        self.netD_A = NLayerDiscriminator(
            opt["output_nc"], opt["ndf"], opt["n_layers_D"], norm, use_sn=True
        )
        self.netD_B = NLayerDiscriminator(opt["input_nc"], opt["ndf"], opt["n_layers_D"], norm)

    def forward(self, real_A, real_B):
        fake_B = self.netG_A(real_A)
        rec_A = self.netG_B(fake_B)
        fake_A = self.netG_B(real_B)
        rec_B = self.netG_A(fake_A)
        return {
            "fake_B": fake_B, "rec_A": rec_A, "fake_A": fake_A, "rec_B": rec_B,
            "pred_fake_B": self.netD_A(fake_B), "pred_fake_A": self.netD_B(fake_A),
        }  # fmt: skip


@heldout(
    "cyclegan",
    lambda: ((rand(1, 3, 32, 32), rand(1, 3, 32, 32, seed=1)), {}),
    edit=("netG_A.model.10", {"padding_type": "zero", "use_dropout": True}),
)
def cyclegan():
    opt = {"input_nc": 3, "output_nc": 3, "ngf": 8, "ndf": 8, "n_blocks": 3, "n_layers_D": 2,
           "norm": "instance", "no_dropout": False}  # fmt: skip
    return CycleGAN(opt)


# --------------------------------------------------------------------------- SPADE


class SPADE(nn.Module):
    def __init__(self, config_text: str, norm_nc: int, label_nc: int):
        super().__init__()
        assert config_text.startswith("spade")
        param_free_norm_type, ks = config_text[len("spade") :].split("3x3")[0], 3
        if param_free_norm_type == "instance":
            self.param_free_norm = nn.InstanceNorm2d(norm_nc, affine=False)
        elif param_free_norm_type == "batch":
            self.param_free_norm = nn.BatchNorm2d(norm_nc, affine=False)
        else:
            raise ValueError(
                f"{param_free_norm_type} is not a recognized param-free norm type in SPADE"
            )
        nhidden = 32
        pw = ks // 2
        self.mlp_shared = nn.Sequential(
            nn.Conv2d(label_nc, nhidden, kernel_size=ks, padding=pw), nn.ReLU()
        )
        self.mlp_gamma = nn.Conv2d(nhidden, norm_nc, kernel_size=ks, padding=pw)
        self.mlp_beta = nn.Conv2d(nhidden, norm_nc, kernel_size=ks, padding=pw)

    def forward(self, x, segmap):
        normalized = self.param_free_norm(x)
        segmap = F.interpolate(segmap, size=x.size()[2:], mode="nearest")
        actv = self.mlp_shared(segmap)
        return normalized * (1 + self.mlp_gamma(actv)) + self.mlp_beta(actv)


class SPADEResnetBlock(nn.Module):
    def __init__(self, fin, fout, opt):
        super().__init__()
        self.learned_shortcut = fin != fout
        fmiddle = min(fin, fout)
        self.conv_0 = nn.Conv2d(fin, fmiddle, kernel_size=3, padding=1)
        self.conv_1 = nn.Conv2d(fmiddle, fout, kernel_size=3, padding=1)
        if self.learned_shortcut:
            self.conv_s = nn.Conv2d(fin, fout, kernel_size=1, bias=False)
        if "spectral" in opt.norm_G:
            self.conv_0 = spectral_norm(self.conv_0)
            self.conv_1 = spectral_norm(self.conv_1)
            if self.learned_shortcut:
                self.conv_s = spectral_norm(self.conv_s)
        spade_config_str = opt.norm_G.replace("spectral", "")
        self.norm_0 = SPADE(spade_config_str, fin, opt.semantic_nc)
        self.norm_1 = SPADE(spade_config_str, fmiddle, opt.semantic_nc)
        if self.learned_shortcut:
            self.norm_s = SPADE(spade_config_str, fin, opt.semantic_nc)

    def shortcut(self, x, seg):
        return self.conv_s(self.norm_s(x, seg)) if self.learned_shortcut else x

    def forward(self, x, seg):
        x_s = self.shortcut(x, seg)
        dx = self.conv_0(F.leaky_relu(self.norm_0(x, seg), 2e-1))
        dx = self.conv_1(F.leaky_relu(self.norm_1(dx, seg), 2e-1))
        return x_s + dx


class SPADEGenerator(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.opt = opt
        nf = opt.ngf
        self.sw = self.sh = opt.crop_size // (2**opt.num_up_layers)
        self.fc = nn.Conv2d(opt.semantic_nc, 4 * nf, 3, padding=1)
        self.head_0 = SPADEResnetBlock(4 * nf, 4 * nf, opt)
        self.G_middle_0 = SPADEResnetBlock(4 * nf, 4 * nf, opt)
        self.up_0 = SPADEResnetBlock(4 * nf, 2 * nf, opt)
        self.up_1 = SPADEResnetBlock(2 * nf, nf, opt)
        self.conv_img = nn.Conv2d(nf, 3, 3, padding=1)
        self.up = nn.Upsample(scale_factor=2)

    def forward(self, input):
        seg = input
        x = self.fc(F.interpolate(seg, size=(self.sh, self.sw)))
        x = self.head_0(x, seg)
        x = self.G_middle_0(self.up(x), seg)
        x = self.up_0(self.up(x), seg)
        x = self.up_1(x, seg)
        return torch.tanh(self.conv_img(F.leaky_relu(x, 2e-1)))


class SPADEOptions:
    """The attribute bag SPADE's option parser hands around."""

    ngf = 16
    semantic_nc = 6
    crop_size = 32
    num_up_layers = 2
    norm_G = "spectralspadeinstance3x3"


def _segmap():
    labels = torch.randint(0, 6, (2, 32, 32), generator=torch.Generator().manual_seed(7))
    return F.one_hot(labels, 6).permute(0, 3, 1, 2).float()


@heldout(
    "spade_generator",
    lambda: ((_segmap(),), {}),
)
def spade_generator():
    return SPADEGenerator(SPADEOptions())
