"""Super-resolution, denoising, style transfer and image-to-image GANs."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class ESPCN(nn.Module):
    def __init__(self, scale_factor, num_channels=1, feature_dims=(64, 32)):
        super().__init__()
        f1, f2 = feature_dims
        self.first_part = nn.Sequential(
            nn.Conv2d(num_channels, f1, kernel_size=5, padding=5 // 2),
            nn.Tanh(),
            nn.Conv2d(f1, f2, kernel_size=3, padding=3 // 2),
            nn.Tanh(),
        )
        self.last_part = nn.Sequential(
            nn.Conv2d(f2, num_channels * (scale_factor**2), kernel_size=3, padding=3 // 2),
            nn.PixelShuffle(scale_factor),
        )

    def forward(self, x):
        return self.last_part(self.first_part(x))


# EDSR: mean shift as a frozen 1x1 conv, residual scaling, an upsampler built from the scale


class MeanShift(nn.Conv2d):
    def __init__(
        self, rgb_range, rgb_mean=(0.4488, 0.4371, 0.4040), rgb_std=(1.0, 1.0, 1.0), sign=-1
    ):
        super().__init__(3, 3, kernel_size=1)
        std = torch.Tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1) / std.view(3, 1, 1, 1)
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean) / std
        for p in self.parameters():
            p.requires_grad = False


def default_conv(in_channels, out_channels, kernel_size, bias=True):
    return nn.Conv2d(in_channels, out_channels, kernel_size, padding=(kernel_size // 2), bias=bias)


class ResBlock(nn.Module):
    def __init__(
        self,
        conv,
        n_feats,
        kernel_size,
        bias=True,
        bn=False,
        act=nn.ReLU(True),  # noqa: B008  (as written in the wild)
        res_scale=1,
    ):
        super().__init__()
        m = []
        for i in range(2):
            m.append(conv(n_feats, n_feats, kernel_size, bias=bias))
            if bn:
                m.append(nn.BatchNorm2d(n_feats))
            if i == 0:
                m.append(act)
        self.body = nn.Sequential(*m)
        self.res_scale = res_scale

    def forward(self, x):
        return self.body(x).mul(self.res_scale) + x


class Upsampler(nn.Sequential):
    def __init__(self, conv, scale, n_feats, bn=False, act=False, bias=True):
        m = []
        if (scale & (scale - 1)) == 0:
            for _ in range(int(scale).bit_length() - 1):
                m.append(conv(n_feats, 4 * n_feats, 3, bias))
                m.append(nn.PixelShuffle(2))
                if bn:
                    m.append(nn.BatchNorm2d(n_feats))
                if act == "relu":
                    m.append(nn.ReLU(True))
        elif scale == 3:
            m.append(conv(n_feats, 9 * n_feats, 3, bias))
            m.append(nn.PixelShuffle(3))
        else:
            raise NotImplementedError(scale)
        super().__init__(*m)


class EDSR(nn.Module):
    def __init__(self, args, conv=default_conv):
        super().__init__()
        n_resblocks = args.n_resblocks
        n_feats = args.n_feats
        kernel_size = 3
        scale = args.scale[0]
        act = nn.ReLU(True)
        self.sub_mean = MeanShift(args.rgb_range)
        self.add_mean = MeanShift(args.rgb_range, sign=1)
        self.head = nn.Sequential(conv(args.n_colors, n_feats, kernel_size))
        m_body = [ResBlock(conv, n_feats, kernel_size, act=act, res_scale=args.res_scale)
                  for _ in range(n_resblocks)]  # fmt: skip
        m_body.append(conv(n_feats, n_feats, kernel_size))
        self.body = nn.Sequential(*m_body)
        self.tail = nn.Sequential(Upsampler(conv, scale, n_feats, act=False),
                                  conv(n_feats, args.n_colors, kernel_size))  # fmt: skip

    def forward(self, x):
        x = self.sub_mean(x)
        x = self.head(x)
        res = self.body(x) + x
        return self.add_mean(self.tail(res))


@heldout("espcn", example=lambda: ((rand(2, 1, 24, 24),), {}))
def espcn():
    torch.manual_seed(10)
    return ESPCN(scale_factor=3)


@heldout("edsr_lite", example=lambda: ((rand(1, 3, 24, 24, seed=1),), {}),
         edit=("body.2", {"res_scale": 0.5}))  # fmt: skip
def edsr_lite():
    torch.manual_seed(11)
    args = SimpleNamespace(n_resblocks=4, n_feats=32, scale=[2], rgb_range=255, n_colors=3,
                           res_scale=0.1)  # fmt: skip
    return EDSR(args)


# SRGAN generator: PReLU residual blocks, sub-pixel upsampling blocks


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.prelu = nn.PReLU()
        self.conv2 = nn.Conv2d(channels, channels, kernel_size=3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        r = self.prelu(self.bn1(self.conv1(x)))
        return x + self.bn2(self.conv2(r))


class UpsampleBLock(nn.Module):
    def __init__(self, in_channels, up_scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels * up_scale**2, kernel_size=3, padding=1)
        self.pixel_shuffle = nn.PixelShuffle(up_scale)
        self.prelu = nn.PReLU()

    def forward(self, x):
        return self.prelu(self.pixel_shuffle(self.conv(x)))


class SRGANGenerator(nn.Module):
    def __init__(self, scale_factor, channels=32, n_res=3):
        upsample_block_num = int(torch.log2(torch.tensor(float(scale_factor))).item())
        super().__init__()
        self.block1 = nn.Sequential(nn.Conv2d(3, channels, kernel_size=9, padding=4), nn.PReLU())
        for i in range(n_res):
            setattr(self, f"block{i + 2}", ResidualBlock(channels))
        self.n_res = n_res
        self.block_post = nn.Sequential(
            nn.Conv2d(channels, channels, kernel_size=3, padding=1), nn.BatchNorm2d(channels)
        )
        tail = [UpsampleBLock(channels, 2) for _ in range(upsample_block_num)]
        tail.append(nn.Conv2d(channels, 3, kernel_size=9, padding=4))
        self.block_out = nn.Sequential(*tail)

    def forward(self, x):
        b1 = self.block1(x)
        h = b1
        for i in range(self.n_res):
            h = getattr(self, f"block{i + 2}")(h)
        h = self.block_post(h)
        return (torch.tanh(self.block_out(b1 + h)) + 1) / 2


@heldout("srgan_generator", example=lambda: ((rand(1, 3, 16, 16, seed=2),), {}))
def srgan_generator():
    torch.manual_seed(12)
    return SRGANGenerator(4)


# DnCNN: predicts the noise


class DnCNN(nn.Module):
    def __init__(self, channels, num_of_layers=8, features=32):
        super().__init__()
        kernel_size, padding = 3, 1
        layers = [nn.Conv2d(channels, features, kernel_size, padding=padding, bias=False),
                  nn.ReLU(inplace=True)]  # fmt: skip
        for _ in range(num_of_layers - 2):
            layers.append(nn.Conv2d(features, features, kernel_size, padding=padding, bias=False))
            layers.append(nn.BatchNorm2d(features))
            layers.append(nn.ReLU(inplace=True))
        layers.append(nn.Conv2d(features, channels, kernel_size, padding=padding, bias=False))
        self.dncnn = nn.Sequential(*layers)

    def forward(self, x):
        return x - self.dncnn(x)


@heldout("dncnn", example=lambda: ((rand(2, 1, 32, 32, seed=3),), {}))
def dncnn():
    torch.manual_seed(13)
    return DnCNN(channels=1)


# U-Net denoiser with a noise-level map input


class DoubleConv(nn.Sequential):
    def __init__(self, in_ch, out_ch, mid_ch=None, norm=nn.GroupNorm):
        mid_ch = mid_ch or out_ch
        super().__init__(
            nn.Conv2d(in_ch, mid_ch, 3, padding=1, bias=False),
            norm(8, mid_ch),
            nn.SiLU(),
            nn.Conv2d(mid_ch, out_ch, 3, padding=1, bias=False),
            norm(8, out_ch),
            nn.SiLU(),
        )


class Down(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.pool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_ch, out_ch))

    def forward(self, x):
        return self.pool_conv(x)


class Up(nn.Module):
    def __init__(self, in_ch, out_ch, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_ch, out_ch, in_ch // 2)
        else:
            self.up = nn.ConvTranspose2d(in_ch, in_ch // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_ch, out_ch)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        dy, dx = x2.size(2) - x1.size(2), x2.size(3) - x1.size(3)
        x1 = F.pad(x1, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNetDenoiser(nn.Module):
    def __init__(self, n_channels=3, base=16, bilinear=True):
        super().__init__()
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels + 1, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // factor)
        self.up1 = Up(base * 4, base * 2 // factor, bilinear)
        self.up2 = Up(base * 2, base, bilinear)
        self.outc = nn.Conv2d(base, n_channels, kernel_size=1)

    def forward(self, noisy, sigma):
        sigma_map = sigma.view(-1, 1, 1, 1).expand(-1, 1, *noisy.shape[-2:])
        x1 = self.inc(torch.cat([noisy, sigma_map], 1))
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up2(self.up1(x3, x2), x1)
        return noisy - self.outc(x)


@heldout(
    "unet_denoiser",
    example=lambda: ((rand(2, 3, 32, 32, seed=4),), {"sigma": torch.tensor([0.1, 0.2])}),
)
def unet_denoiser():
    torch.manual_seed(14)
    return UNetDenoiser()


# Johnson et al. transformer net: reflection padding, instance norm, upsample-then-conv


class ConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class JResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = nn.InstanceNorm2d(channels, affine=True)
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = F.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(nn.Module):
    def __init__(self, width=16, n_res=3):
        super().__init__()
        self.conv1 = ConvLayer(3, width, kernel_size=9, stride=1)
        self.in1 = nn.InstanceNorm2d(width, affine=True)
        self.conv2 = ConvLayer(width, width * 2, kernel_size=3, stride=2)
        self.in2 = nn.InstanceNorm2d(width * 2, affine=True)
        self.conv3 = ConvLayer(width * 2, width * 4, kernel_size=3, stride=2)
        self.in3 = nn.InstanceNorm2d(width * 4, affine=True)
        self.res = nn.Sequential(*[JResidualBlock(width * 4) for _ in range(n_res)])
        self.deconv1 = UpsampleConvLayer(width * 4, width * 2, kernel_size=3, stride=1, upsample=2)
        self.in4 = nn.InstanceNorm2d(width * 2, affine=True)
        self.deconv2 = UpsampleConvLayer(width * 2, width, kernel_size=3, stride=1, upsample=2)
        self.in5 = nn.InstanceNorm2d(width, affine=True)
        self.deconv3 = ConvLayer(width, 3, kernel_size=9, stride=1)
        self.relu = nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        return self.deconv3(y)


@heldout("johnson_style", example=lambda: ((rand(1, 3, 32, 32, seed=5),), {}))
def johnson_style():
    torch.manual_seed(15)
    return TransformerNet()


# CycleGAN ResNet generator (norm layer passed as a partial) and a WGAN-GP critic


class ResnetBlock(nn.Module):
    def __init__(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        super().__init__()
        self.conv_block = self.build_conv_block(
            dim, padding_type, norm_layer, use_dropout, use_bias
        )

    def build_conv_block(self, dim, padding_type, norm_layer, use_dropout, use_bias):
        pads = {"reflect": nn.ReflectionPad2d, "replicate": nn.ReplicationPad2d}
        block = []
        for i in range(2):
            p = 0
            if padding_type in pads:
                block += [pads[padding_type](1)]
            elif padding_type == "zero":
                p = 1
            else:
                raise NotImplementedError(f"padding [{padding_type}] is not implemented")
            block += [nn.Conv2d(dim, dim, kernel_size=3, padding=p, bias=use_bias), norm_layer(dim)]
            if i == 0:
                block += [nn.ReLU(True)]
                if use_dropout:
                    block += [nn.Dropout(0.5)]
        return nn.Sequential(*block)

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
        n_down = 2
        for i in range(n_down):
            mult = 2**i
            model += [nn.Conv2d(ngf * mult, ngf * mult * 2, kernel_size=3, stride=2, padding=1, bias=use_bias),
                      norm_layer(ngf * mult * 2), nn.ReLU(True)]  # fmt: skip
        mult = 2**n_down
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * mult, padding_type=padding_type, norm_layer=norm_layer,
                                  use_dropout=use_dropout, use_bias=use_bias)]  # fmt: skip
        for i in range(n_down):
            mult = 2 ** (n_down - i)
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


@heldout("cyclegan_generator", example=lambda: ((rand(1, 3, 32, 32, seed=6),), {}),
         edit=("model.10", {"padding_type": "zero"}))  # fmt: skip
def cyclegan_generator():
    torch.manual_seed(16)
    norm = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
    return ResnetGenerator(3, 3, ngf=16, norm_layer=norm, n_blocks=3)


class Critic(nn.Module):
    """WGAN-GP critic: no batch norm (the penalty is per sample), layer norm instead."""

    def __init__(self, channels_img, features_d, img_size=32):
        super().__init__()
        self.disc = nn.Sequential(
            nn.Conv2d(channels_img, features_d, kernel_size=4, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            self._block(features_d, features_d * 2, 4, 2, 1, img_size // 4),
            self._block(features_d * 2, features_d * 4, 4, 2, 1, img_size // 8),
            nn.Conv2d(features_d * 4, 1, kernel_size=4, stride=2, padding=0),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding, size):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
            nn.LayerNorm([out_channels, size, size], elementwise_affine=True),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.disc(x).view(-1)


@heldout("wgan_gp_critic", example=lambda: ((rand(4, 3, 32, 32, seed=7),), {}))
def wgan_gp_critic():
    torch.manual_seed(17)
    return Critic(3, 16)
