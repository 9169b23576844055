"""Crowd counting: the multi-column CNN (MCNN) and CSRNet's dilated back-end."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from .spec import heldout, rand


class Conv2d(nn.Module):
    """MCNN's own conv wrapper: same padding, optional BN, ReLU on by default."""

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        relu=True,
        same_padding=False,
        bn=False,
    ):
        super().__init__()
        padding = int((kernel_size - 1) / 2) if same_padding else 0
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding=padding)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001, momentum=0, affine=True) if bn else None
        self.relu = nn.ReLU(inplace=True) if relu else None

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.relu is not None:
            x = self.relu(x)
        return x


class MCNN(nn.Module):
    """Multi-column CNN for crowd counting (Zhang et al. 2016)."""

    def __init__(self, bn=False):
        super().__init__()

        self.branch1 = nn.Sequential(
            Conv2d(1, 16, 9, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(16, 32, 7, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(32, 16, 7, same_padding=True, bn=bn),
            Conv2d(16, 8, 7, same_padding=True, bn=bn),
        )

        self.branch2 = nn.Sequential(
            Conv2d(1, 20, 7, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(20, 40, 5, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(40, 20, 5, same_padding=True, bn=bn),
            Conv2d(20, 10, 5, same_padding=True, bn=bn),
        )

        self.branch3 = nn.Sequential(
            Conv2d(1, 24, 5, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(24, 48, 3, same_padding=True, bn=bn),
            nn.MaxPool2d(2),
            Conv2d(48, 24, 3, same_padding=True, bn=bn),
            Conv2d(24, 12, 3, same_padding=True, bn=bn),
        )

        self.fuse = nn.Sequential(Conv2d(30, 1, 1, same_padding=True, bn=bn))

    def forward(self, im_data):
        x1 = self.branch1(im_data)
        x2 = self.branch2(im_data)
        x3 = self.branch3(im_data)
        x = torch.cat((x1, x2, x3), 1)
        x = self.fuse(x)
        return x


class CrowdCounter(nn.Module):
    def __init__(self, bn=False):
        super().__init__()
        self.DME = MCNN(bn=bn)

    def forward(self, im_data):
        density_map = self.DME(im_data)
        return density_map, density_map.sum(dim=(1, 2, 3))


@heldout(
    "mcnn_shanghaitech",
    lambda: ((rand(2, 1, 64, 64),), {}),
    edit=("DME.branch2.2", {"kernel_size": 3}),
)
def build_mcnn():
    return CrowdCounter(bn=True)


# ----------------------------------------------------------------------------------------------
# CSRNet (Li et al. 2018): VGG-16 front end, dilated back end, list-of-widths layer builder
# ----------------------------------------------------------------------------------------------


def make_layers(cfg, in_channels=3, batch_norm=False, dilation=False):
    if dilation:
        d_rate = 2
    else:
        d_rate = 1
    layers = []
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=d_rate, dilation=d_rate)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


class CSRNet(nn.Module):
    def __init__(self, load_weights=False, width_div=8):
        super().__init__()
        self.seen = 0
        w = lambda c: c // width_div if isinstance(c, int) else c  # noqa: E731
        self.frontend_feat = [
            w(c) for c in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512]
        ]
        self.backend_feat = [w(c) for c in [512, 512, 512, 256, 128, 64]]
        self.frontend = make_layers(self.frontend_feat)
        self.backend = make_layers(self.backend_feat, in_channels=w(512), dilation=True)
        self.output_layer = nn.Conv2d(w(64), 1, kernel_size=1)
        if not load_weights:
            self._initialize_weights()

    def forward(self, x):
        x = self.frontend(x)
        x = self.backend(x)
        x = self.output_layer(x)
        return x

    def _initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, std=0.01)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)


class CSRNetWithHead(nn.Sequential):
    """A regression wrapper some forks add: density map plus an upsampled, count-preserving map."""

    def __init__(self, net: CSRNet, upsample=8):
        super().__init__(
            OrderedDict(
                [("csrnet", net), ("up", nn.Upsample(scale_factor=upsample, mode="bilinear"))]
            )
        )
        self.upsample = upsample

    def forward(self, x):
        d = super().forward(x)
        return d / (self.upsample**2)


@heldout("csrnet_dilated", lambda: ((rand(1, 3, 64, 64),), {}))
def build_csrnet():
    return CSRNetWithHead(CSRNet(width_div=8))
