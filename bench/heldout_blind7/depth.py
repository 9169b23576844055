"""Stereo and monocular depth: a PSMNet-style cost volume with stacked 3-D hourglasses and a
Monodepth2 depth decoder with disparity heads at four scales."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# PSMNet (Chang & Chen 2018), basic 3-D architecture plus one hourglass, small widths
# ----------------------------------------------------------------------------------------------


def convbn(in_planes, out_planes, kernel_size, stride, pad, dilation):
    return nn.Sequential(
        nn.Conv2d(
            in_planes,
            out_planes,
            kernel_size=kernel_size,
            stride=stride,
            padding=dilation if dilation > 1 else pad,
            dilation=dilation,
            bias=False,
        ),
        nn.BatchNorm2d(out_planes),
    )


def convbn_3d(in_planes, out_planes, kernel_size, stride, pad):
    return nn.Sequential(
        nn.Conv3d(
            in_planes, out_planes, kernel_size=kernel_size, padding=pad, stride=stride, bias=False
        ),
        nn.BatchNorm3d(out_planes),
    )


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride, downsample, pad, dilation):
        super().__init__()
        self.conv1 = nn.Sequential(
            convbn(inplanes, planes, 3, stride, pad, dilation), nn.ReLU(inplace=True)
        )
        self.conv2 = convbn(planes, planes, 3, 1, pad, dilation)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.conv1(x)
        out = self.conv2(out)
        if self.downsample is not None:
            x = self.downsample(x)
        out += x
        return out


class feature_extraction(nn.Module):
    def __init__(self, base=8):
        super().__init__()
        self.inplanes = base
        self.firstconv = nn.Sequential(
            convbn(3, base, 3, 2, 1, 1),
            nn.ReLU(inplace=True),
            convbn(base, base, 3, 1, 1, 1),
            nn.ReLU(inplace=True),
        )
        self.layer1 = self._make_layer(BasicBlock, base, 1, 1, 1, 1)
        self.layer2 = self._make_layer(BasicBlock, base * 2, 1, 2, 1, 1)
        self.layer3 = self._make_layer(BasicBlock, base * 2, 1, 1, 1, 2)
        self.branch1 = nn.Sequential(
            nn.AvgPool2d((8, 8), stride=(8, 8)),
            convbn(base * 2, base // 2, 1, 1, 0, 1),
            nn.ReLU(inplace=True),
        )
        self.branch2 = nn.Sequential(
            nn.AvgPool2d((4, 4), stride=(4, 4)),
            convbn(base * 2, base // 2, 1, 1, 0, 1),
            nn.ReLU(inplace=True),
        )
        self.lastconv = nn.Sequential(
            convbn(base * 2 + base * 2 + base, base * 2, 3, 1, 1, 1),
            nn.ReLU(inplace=True),
            nn.Conv2d(base * 2, base, kernel_size=1, padding=0, stride=1, bias=False),
        )

    def _make_layer(self, block, planes, blocks, stride, pad, dilation):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(
                    self.inplanes,
                    planes * block.expansion,
                    kernel_size=1,
                    stride=stride,
                    bias=False,
                ),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, pad, dilation))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, 1, None, pad, dilation))
        return nn.Sequential(*layers)

    def forward(self, x):
        output = self.firstconv(x)
        output = self.layer1(output)
        output_raw = self.layer2(output)
        output_skip = self.layer3(output_raw)

        output_branch1 = self.branch1(output_skip)
        output_branch1 = F.interpolate(
            output_branch1,
            (output_skip.size()[2], output_skip.size()[3]),
            mode="bilinear",
            align_corners=False,
        )
        output_branch2 = self.branch2(output_skip)
        output_branch2 = F.interpolate(
            output_branch2,
            (output_skip.size()[2], output_skip.size()[3]),
            mode="bilinear",
            align_corners=False,
        )

        output_feature = torch.cat((output_raw, output_skip, output_branch2, output_branch1), 1)
        return self.lastconv(output_feature)


class hourglass(nn.Module):
    def __init__(self, inplanes):
        super().__init__()
        self.conv1 = nn.Sequential(
            convbn_3d(inplanes, inplanes * 2, kernel_size=3, stride=2, pad=1), nn.ReLU(inplace=True)
        )
        self.conv2 = convbn_3d(inplanes * 2, inplanes * 2, kernel_size=3, stride=1, pad=1)
        self.conv3 = nn.Sequential(
            convbn_3d(inplanes * 2, inplanes * 2, kernel_size=3, stride=2, pad=1),
            nn.ReLU(inplace=True),
        )
        self.conv4 = nn.Sequential(
            convbn_3d(inplanes * 2, inplanes * 2, kernel_size=3, stride=1, pad=1),
            nn.ReLU(inplace=True),
        )
        self.conv5 = nn.Sequential(
            nn.ConvTranspose3d(
                inplanes * 2,
                inplanes * 2,
                kernel_size=3,
                padding=1,
                output_padding=1,
                stride=2,
                bias=False,
            ),
            nn.BatchNorm3d(inplanes * 2),
        )
        self.conv6 = nn.Sequential(
            nn.ConvTranspose3d(
                inplanes * 2,
                inplanes,
                kernel_size=3,
                padding=1,
                output_padding=1,
                stride=2,
                bias=False,
            ),
            nn.BatchNorm3d(inplanes),
        )

    def forward(self, x, presqu, postsqu):
        out = self.conv1(x)
        pre = self.conv2(out)
        if postsqu is not None:
            pre = F.relu(pre + postsqu, inplace=True)
        else:
            pre = F.relu(pre, inplace=True)
        out = self.conv3(pre)
        out = self.conv4(out)
        if presqu is not None:
            post = F.relu(self.conv5(out) + presqu, inplace=True)
        else:
            post = F.relu(self.conv5(out) + pre, inplace=True)
        out = self.conv6(post)
        return out, pre, post


class disparityregression(nn.Module):
    def __init__(self, maxdisp):
        super().__init__()
        self.register_buffer(
            "disp", torch.Tensor(np.reshape(np.array(range(maxdisp)), [1, maxdisp, 1, 1]))
        )

    def forward(self, x):
        return torch.sum(x * self.disp, 1, keepdim=True)


class PSMNet(nn.Module):
    def __init__(self, maxdisp, base=8):
        super().__init__()
        self.maxdisp = maxdisp
        self.feature_extraction = feature_extraction(base)
        c = base * 2
        h = base
        self.dres0 = nn.Sequential(
            convbn_3d(c, h, 3, 1, 1),
            nn.ReLU(inplace=True),
            convbn_3d(h, h, 3, 1, 1),
            nn.ReLU(inplace=True),
        )
        self.dres1 = nn.Sequential(
            convbn_3d(h, h, 3, 1, 1), nn.ReLU(inplace=True), convbn_3d(h, h, 3, 1, 1)
        )
        self.dres2 = hourglass(h)
        self.classif1 = nn.Sequential(
            convbn_3d(h, h, 3, 1, 1),
            nn.ReLU(inplace=True),
            nn.Conv3d(h, 1, kernel_size=3, padding=1, stride=1, bias=False),
        )
        self.regression = disparityregression(maxdisp)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.data.normal_(0, (2.0 / n) ** 0.5)
            elif isinstance(m, nn.Conv3d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.kernel_size[2] * m.out_channels
                m.weight.data.normal_(0, (2.0 / n) ** 0.5)

    def forward(self, left, right):
        refimg_fea = self.feature_extraction(left)
        targetimg_fea = self.feature_extraction(right)
        D = self.maxdisp // 4
        B, C, H, W = refimg_fea.shape
        # matching cost: concatenation of left and shifted right features at each disparity
        cost = refimg_fea.new_zeros(B, C * 2, D, H, W)
        for i in range(D):
            if i > 0:
                cost[:, :C, i, :, i:] = refimg_fea[:, :, :, i:]
                cost[:, C:, i, :, i:] = targetimg_fea[:, :, :, :-i]
            else:
                cost[:, :C, i, :, :] = refimg_fea
                cost[:, C:, i, :, :] = targetimg_fea
        cost = cost.contiguous()

        cost0 = self.dres0(cost)
        cost0 = self.dres1(cost0) + cost0
        out1, pre1, post1 = self.dres2(cost0, None, None)
        out1 = out1 + cost0
        cost1 = self.classif1(out1)
        cost1 = F.interpolate(
            cost1,
            [self.maxdisp, left.size()[2], left.size()[3]],
            mode="trilinear",
            align_corners=False,
        )
        cost1 = torch.squeeze(cost1, 1)
        pred1 = F.softmax(cost1, dim=1)
        return self.regression(pred1)


@heldout("psmnet_stereo", lambda: ((rand(1, 3, 32, 64), rand(1, 3, 32, 64, seed=1)), {}))
def build_psmnet():
    return PSMNet(maxdisp=16, base=8)


# ----------------------------------------------------------------------------------------------
# Monodepth2 (Godard et al. 2019): tiny ResNet encoder and the multi-scale depth decoder
# ----------------------------------------------------------------------------------------------


class ConvBlock(nn.Module):
    """Layer to perform a convolution followed by ELU."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = Conv3x3(in_channels, out_channels)
        self.nonlin = nn.ELU(inplace=True)

    def forward(self, x):
        return self.nonlin(self.conv(x))


class Conv3x3(nn.Module):
    """Layer to pad and convolve input."""

    def __init__(self, in_channels, out_channels, use_refl=True):
        super().__init__()
        if use_refl:
            self.pad = nn.ReflectionPad2d(1)
        else:
            self.pad = nn.ZeroPad2d(1)
        self.conv = nn.Conv2d(int(in_channels), int(out_channels), 3)

    def forward(self, x):
        return self.conv(self.pad(x))


def upsample(x):
    return F.interpolate(x, scale_factor=2, mode="nearest")


class ResnetEncoder(nn.Module):
    def __init__(self, num_ch_enc=(8, 8, 16, 32, 64), num_input_images=1):
        super().__init__()
        self.num_ch_enc = np.array(num_ch_enc)
        c = list(num_ch_enc)
        self.conv1 = nn.Conv2d(3 * num_input_images, c[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(c[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages = []
        for i in range(1, 5):
            stride = 1 if i == 1 else 2
            down = None
            if stride != 1 or c[i - 1] != c[i]:
                down = nn.Sequential(
                    nn.Conv2d(c[i - 1], c[i], 1, stride, bias=False), nn.BatchNorm2d(c[i])
                )
            stages.append(BasicBlock(c[i - 1], c[i], stride, down, 1, 1))
        self.layer1, self.layer2, self.layer3, self.layer4 = stages

    def forward(self, input_image):
        self.features = []
        x = (input_image - 0.45) / 0.225
        x = self.conv1(x)
        x = self.bn1(x)
        self.features.append(self.relu(x))
        self.features.append(self.layer1(self.maxpool(self.features[-1])))
        self.features.append(self.layer2(self.features[-1]))
        self.features.append(self.layer3(self.features[-1]))
        self.features.append(self.layer4(self.features[-1]))
        return self.features


class DepthDecoder(nn.Module):
    def __init__(self, num_ch_enc, scales=range(4), num_output_channels=1, use_skips=True):
        super().__init__()
        self.num_output_channels = num_output_channels
        self.use_skips = use_skips
        self.upsample_mode = "nearest"
        self.scales = scales

        self.num_ch_enc = num_ch_enc
        self.num_ch_dec = np.array([4, 8, 16, 32, 64])

        # decoder
        self.convs = OrderedDict()
        for i in range(4, -1, -1):
            # upconv_0
            num_ch_in = self.num_ch_enc[-1] if i == 4 else self.num_ch_dec[i + 1]
            num_ch_out = self.num_ch_dec[i]
            self.convs[("upconv", i, 0)] = ConvBlock(num_ch_in, num_ch_out)

            # upconv_1
            num_ch_in = self.num_ch_dec[i]
            if self.use_skips and i > 0:
                num_ch_in += self.num_ch_enc[i - 1]
            num_ch_out = self.num_ch_dec[i]
            self.convs[("upconv", i, 1)] = ConvBlock(num_ch_in, num_ch_out)

        for s in self.scales:
            self.convs[("dispconv", s)] = Conv3x3(self.num_ch_dec[s], self.num_output_channels)

        self.decoder = nn.ModuleList(list(self.convs.values()))
        self.sigmoid = nn.Sigmoid()

    def forward(self, input_features):
        self.outputs = {}

        # decoder
        x = input_features[-1]
        for i in range(4, -1, -1):
            x = self.convs[("upconv", i, 0)](x)
            x = [upsample(x)]
            if self.use_skips and i > 0:
                x += [input_features[i - 1]]
            x = torch.cat(x, 1)
            x = self.convs[("upconv", i, 1)](x)
            if i in self.scales:
                self.outputs[("disp", i)] = self.sigmoid(self.convs[("dispconv", i)](x))

        return self.outputs


class MonodepthModel(nn.Module):
    def __init__(self, opts):
        super().__init__()
        self.encoder = ResnetEncoder(opts["enc_channels"], num_input_images=1)
        self.depth = DepthDecoder(self.encoder.num_ch_enc, opts["scales"])

    def forward(self, image):
        outputs = self.depth(self.encoder(image))
        return [outputs[("disp", s)] for s in sorted(k[1] for k in outputs)]


@heldout(
    "monodepth2_decoder",
    lambda: ((torch.rand(2, 3, 64, 96, generator=torch.Generator().manual_seed(0)),), {}),
)
def build_monodepth():
    return MonodepthModel({"enc_channels": (8, 8, 16, 32, 64), "scales": range(4)})
