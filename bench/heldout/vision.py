"""Held-out vision models: VGG from a cfg with 'M' strings, a ResNet with a block class and a
norm_layer default, a recursive stacked hourglass, an attention U-Net written with OrderedDicts."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --- VGG from a cfg of ints and 'M' ----------------------------------------------------------------

cfgs: dict[str, list[int | str]] = {
    "tiny": [8, "M", 16, 16, "M", 32, "M"],
    "A": [64, "M", 128, "M", 256, 256, "M"],
}


def make_layers(cfg: list[int | str], batch_norm: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers += (
                [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                if batch_norm
                else [conv2d, nn.ReLU(inplace=True)]
            )
            in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    def __init__(
        self,
        features: nn.Module,
        num_classes: int = 1000,
        init_weights: bool = True,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        last = [m for m in features.modules() if isinstance(m, nn.Conv2d)][-1].out_channels
        self.classifier = nn.Sequential(
            nn.Linear(last * 2 * 2, 64),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(64, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


@heldout("vgg_cfg", lambda: ((rand(2, 3, 32, 32),), {}), edit=("classifier.2", {"p": 0.1}))
def vgg() -> nn.Module:
    return VGG(make_layers(cfgs["tiny"], batch_norm=True), num_classes=7)


# --- ResNet with a block class, layers list, norm_layer default, stride replaced by dilation ------


class Bottleneck(nn.Module):
    expansion: int = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Optional[nn.Module] = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = norm_layer(width)
        self.conv2 = nn.Conv2d(
            width, width, 3, stride, padding=dilation, groups=groups, dilation=dilation, bias=False
        )
        self.bn2 = norm_layer(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(
        self,
        block: type[Bottleneck],
        layers: list[int],
        num_classes: int = 1000,
        groups: int = 1,
        width_per_group: int = 64,
        replace_stride_with_dilation: Optional[list[bool]] = None,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
        base: int = 64,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = base
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(
                f"replace_stride_with_dilation should be None or a 3-element tuple, got {replace_stride_with_dilation}"
            )
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, base, layers[0])
        self.layer2 = self._make_layer(
            block, base * 2, layers[1], stride=2, dilate=replace_stride_with_dilation[0]
        )
        self.layer3 = self._make_layer(
            block, base * 4, layers[2], stride=2, dilate=replace_stride_with_dilation[1]
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(base * 4 * block.expansion, num_classes)

    def _make_layer(
        self,
        block: type[Bottleneck],
        planes: int,
        blocks: int,
        stride: int = 1,
        dilate: bool = False,
    ) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                norm_layer(planes * block.expansion),
            )
        layers = [
            block(
                self.inplanes,
                planes,
                stride,
                downsample,
                self.groups,
                self.base_width,
                previous_dilation,
                norm_layer,
            )
        ]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(
                block(
                    self.inplanes,
                    planes,
                    groups=self.groups,
                    base_width=self.base_width,
                    dilation=self.dilation,
                    norm_layer=norm_layer,
                )
            )
        return nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


@heldout(
    "resnet_groupnorm_dilated", lambda: ((rand(1, 3, 32, 32),), {}), edit=("fc", {"bias": False})
)
def resnet() -> nn.Module:
    return ResNet(
        Bottleneck,
        [1, 2, 1],
        num_classes=4,
        groups=2,
        width_per_group=8,
        base=8,
        replace_stride_with_dilation=[False, True, False],
        norm_layer=lambda c: nn.GroupNorm(2, c),
    )


# --- Stacked hourglass: a module that builds itself recursively ------------------------------------


class Residual(nn.Module):
    def __init__(self, inp_dim: int, out_dim: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(inp_dim)
        self.conv = nn.Conv2d(inp_dim, out_dim, 3, padding=1)
        self.skip = nn.Identity() if inp_dim == out_dim else nn.Conv2d(inp_dim, out_dim, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(F.relu(self.bn(x))) + self.skip(x)


class Hourglass(nn.Module):
    def __init__(self, n: int, f: int, increase: int = 0) -> None:
        super().__init__()
        nf = f + increase
        self.up1 = Residual(f, f)
        self.pool1 = nn.MaxPool2d(2, 2)
        self.low1 = Residual(f, nf)
        self.n = n
        self.low2 = Hourglass(n - 1, nf) if self.n > 1 else Residual(nf, nf)
        self.low3 = Residual(nf, f)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x: Tensor) -> Tensor:
        return self.up1(x) + self.up2(self.low3(self.low2(self.low1(self.pool1(x)))))


class PoseNet(nn.Module):
    def __init__(
        self, nstack: int, inp_dim: int, oup_dim: int, increase: int = 0, depth: int = 3
    ) -> None:
        super().__init__()
        self.nstack = nstack
        self.pre = nn.Sequential(nn.Conv2d(3, inp_dim, 3, padding=1), Residual(inp_dim, inp_dim))
        self.hgs = nn.ModuleList([Hourglass(depth, inp_dim, increase) for _ in range(nstack)])
        self.outs = nn.ModuleList([nn.Conv2d(inp_dim, oup_dim, 1) for _ in range(nstack)])
        self.merge_preds = nn.ModuleList(
            [nn.Conv2d(oup_dim, inp_dim, 1) for _ in range(nstack - 1)]
        )

    def forward(self, imgs: Tensor) -> Tensor:
        x = self.pre(imgs)
        preds = []
        for i in range(self.nstack):
            preds.append(self.outs[i](self.hgs[i](x)))
            if i < self.nstack - 1:
                x = x + self.merge_preds[i](preds[-1])
        return torch.stack(preds, 1)


@heldout(
    "stacked_hourglass",
    lambda: ((rand(1, 3, 16, 16),), {}),
    edit=("hgs.0.up2", {"mode": "bilinear"}),
)
def hourglass() -> nn.Module:
    return PoseNet(nstack=2, inp_dim=8, oup_dim=4, increase=4, depth=2)


# --- Attention U-Net: OrderedDict blocks, gating signals, filters from a base and 2**i ------------


def conv_block(ch_in: int, ch_out: int) -> nn.Sequential:
    return nn.Sequential(
        OrderedDict(
            [
                ("conv1", nn.Conv2d(ch_in, ch_out, 3, padding=1, bias=True)),
                ("bn1", nn.BatchNorm2d(ch_out)),
                ("act1", nn.ReLU(inplace=True)),
                ("conv2", nn.Conv2d(ch_out, ch_out, 3, padding=1, bias=True)),
                ("bn2", nn.BatchNorm2d(ch_out)),
                ("act2", nn.ReLU(inplace=True)),
            ]
        )
    )


class AttentionGate(nn.Module):
    def __init__(self, F_g: int, F_l: int, F_int: int) -> None:
        super().__init__()
        self.W_g = nn.Sequential(nn.Conv2d(F_g, F_int, 1), nn.BatchNorm2d(F_int))
        self.W_x = nn.Sequential(nn.Conv2d(F_l, F_int, 1), nn.BatchNorm2d(F_int))
        self.psi = nn.Sequential(nn.Conv2d(F_int, 1, 1), nn.BatchNorm2d(1), nn.Sigmoid())

    def forward(self, g: Tensor, x: Tensor) -> Tensor:
        return x * self.psi(F.relu(self.W_g(g) + self.W_x(x)))


class AttU_Net(nn.Module):
    def __init__(self, img_ch: int = 3, output_ch: int = 1, base: int = 64, depth: int = 4) -> None:
        super().__init__()
        filters = [base * 2**i for i in range(depth)]
        self.pool = nn.MaxPool2d(2, 2)
        self.encoders = nn.ModuleList(
            [conv_block(img_ch if i == 0 else filters[i - 1], f) for i, f in enumerate(filters)]
        )
        self.ups = nn.ModuleList()
        self.gates = nn.ModuleList()
        self.decoders = nn.ModuleList()
        for i in range(depth - 1, 0, -1):
            self.ups.append(
                nn.Sequential(
                    nn.Upsample(scale_factor=2), nn.Conv2d(filters[i], filters[i - 1], 3, padding=1)
                )
            )
            self.gates.append(AttentionGate(filters[i - 1], filters[i - 1], filters[i - 1] // 2))
            self.decoders.append(conv_block(filters[i], filters[i - 1]))
        self.head = nn.Conv2d(filters[0], output_ch, 1)

    def forward(self, x: Tensor) -> Tensor:
        skips = []
        for i, enc in enumerate(self.encoders):
            x = enc(x if i == 0 else self.pool(x))
            skips.append(x)
        skips.pop()
        for up, gate, dec in zip(self.ups, self.gates, self.decoders):
            d = up(x)
            s = skips.pop()
            x = dec(torch.cat((gate(d, s), d), dim=1))
        return self.head(x)


@heldout(
    "attention_unet", lambda: ((rand(1, 3, 16, 16),), {}), edit=("encoders.0.bn1", {"eps": 1e-3})
)
def att_unet() -> nn.Module:
    return AttU_Net(img_ch=3, output_ch=2, base=4, depth=3)
