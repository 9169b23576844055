# ruff: noqa: E741, UP006, UP008, UP035  (the authors' habits are kept: this set measures code as people write it)
"""Dense prediction heads: an FPN with RetinaNet heads, an SSD-lite head, DeepLabV3 ASPP."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Dict, List, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .spec import heldout, rand

# --- a tiny backbone shared by the three (each builds its own) -------------------------------


def conv_bn_relu(cin: int, cout: int, stride: int = 1, dilation: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=dilation, dilation=dilation, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class TinyBackbone(nn.Module):
    """Four stages, each halving the resolution; returns every stage's output by name."""

    def __init__(
        self, in_ch: int = 3, widths: Sequence[int] = (16, 32, 64, 128), dilate_last: bool = False
    ):
        super().__init__()
        self.stem = conv_bn_relu(in_ch, widths[0], stride=2)
        stages = []
        prev = widths[0]
        for i, w in enumerate(widths):
            last = i == len(widths) - 1
            stride = 1 if (i == 0 or (last and dilate_last)) else 2
            stages.append(
                nn.Sequential(
                    conv_bn_relu(prev, w, stride),
                    conv_bn_relu(w, w, dilation=2 if last and dilate_last else 1),
                )
            )
            prev = w
        self.stages = nn.ModuleList(stages)
        self.out_channels = list(widths)

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        x = self.stem(x)
        out = OrderedDict()
        for i, stage in enumerate(self.stages):
            x = stage(x)
            out[f"c{i + 2}"] = x
        return out


# --- FPN + RetinaNet heads ---------------------------------------------------------------------


class FPN(nn.Module):
    def __init__(self, in_channels_list: List[int], out_channels: int, extra_p6p7: bool = True):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        if extra_p6p7:
            self.p6 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
            self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        self.use_p6p7 = extra_p6p7
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

    def forward(self, x: List[Tensor]) -> List[Tensor]:
        last_inner = self.inner_blocks[-1](x[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.inner_blocks[idx](x[idx])
            inner_top_down = F.interpolate(
                last_inner, size=inner_lateral.shape[-2:], mode="nearest"
            )
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.layer_blocks[idx](last_inner))
        if self.use_p6p7:
            p6 = self.p6(results[-1])
            results.extend([p6, self.p7(F.relu(p6))])
        return results


class RetinaClassificationHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01, num_convs=4):
        super().__init__()
        conv = []
        for _ in range(num_convs):
            conv.append(nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1))
            conv.append(nn.ReLU())
        self.conv = nn.Sequential(*conv)
        for layer in self.conv.modules():
            if isinstance(layer, nn.Conv2d):
                torch.nn.init.normal_(layer.weight, std=0.01)
                torch.nn.init.constant_(layer.bias, 0)
        self.cls_logits = nn.Conv2d(
            in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1
        )
        torch.nn.init.normal_(self.cls_logits.weight, std=0.01)
        torch.nn.init.constant_(
            self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability)
        )
        self.num_classes = num_classes
        self.num_anchors = num_anchors

    def forward(self, x: List[Tensor]) -> Tensor:
        all_cls_logits = []
        for features in x:
            cls_logits = self.cls_logits(self.conv(features))
            N, _, H, W = cls_logits.shape
            cls_logits = cls_logits.view(N, -1, self.num_classes, H, W).permute(0, 3, 4, 1, 2)
            all_cls_logits.append(cls_logits.reshape(N, -1, self.num_classes))
        return torch.cat(all_cls_logits, dim=1)


class RetinaRegressionHead(RetinaClassificationHead):
    """Same tower as the classifier, 4 box deltas per anchor instead of class logits."""

    def __init__(self, in_channels, num_anchors, num_convs=4):
        super().__init__(
            in_channels, num_anchors, num_classes=4, prior_probability=0.5, num_convs=num_convs
        )
        torch.nn.init.zeros_(self.cls_logits.bias)


class RetinaNetLite(nn.Module):
    def __init__(
        self,
        num_classes=20,
        fpn_channels=32,
        anchors_per_location=9,
        backbone_widths=(16, 32, 64, 128),
        num_convs=4,
    ):
        super().__init__()
        self.backbone = TinyBackbone(widths=backbone_widths)
        self.fpn = FPN(self.backbone.out_channels[1:], fpn_channels)
        self.head = nn.ModuleDict(
            {
                "classification": RetinaClassificationHead(
                    fpn_channels, anchors_per_location, num_classes, num_convs=num_convs
                ),
                "bbox_regression": RetinaRegressionHead(
                    fpn_channels, anchors_per_location, num_convs=num_convs
                ),
            }
        )

    def forward(self, images):
        feats = list(self.backbone(images).values())[1:]
        feats = self.fpn(feats)
        return {k: head(feats) for k, head in self.head.items()}


@heldout(
    "retinanet_fpn",
    example=lambda: ((rand(1, 3, 64, 64),), {}),
)
def retinanet_fpn() -> nn.Module:
    torch.manual_seed(40)
    return RetinaNetLite(num_classes=5, fpn_channels=32, anchors_per_location=3, num_convs=2)


# --- SSD-lite head with an L2Norm on the first feature map ------------------------------------


class L2Norm(nn.Module):
    def __init__(self, n_channels, scale):
        super(L2Norm, self).__init__()
        self.n_channels = n_channels
        self.gamma = scale or None
        self.eps = 1e-10
        self.weight = nn.Parameter(torch.Tensor(self.n_channels))
        nn.init.constant_(self.weight, self.gamma)

    def forward(self, x):
        norm = x.pow(2).sum(dim=1, keepdim=True).sqrt() + self.eps
        x = torch.div(x, norm)
        return self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x


def add_extras(cfg, i):
    """Extra layers for feature scaling, from a list spec; 'S' means the next conv has stride 2."""
    layers = []
    in_channels = i
    flag = False
    for k, v in enumerate(cfg):
        if in_channels != "S":
            if v == "S":
                layers += [
                    nn.Conv2d(
                        in_channels, cfg[k + 1], kernel_size=(1, 3)[flag], stride=2, padding=1
                    )
                ]
            else:
                layers += [nn.Conv2d(in_channels, v, kernel_size=(1, 3)[flag])]
            flag = not flag
        in_channels = v
    return layers


def separable_conv(in_channels, out_channels, kernel_size=3, padding=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, in_channels, kernel_size, padding=padding, groups=in_channels),
        nn.BatchNorm2d(in_channels),
        nn.ReLU6(),
        nn.Conv2d(in_channels, out_channels, kernel_size=1),
    )


class SSDLite(nn.Module):
    def __init__(
        self,
        phase,
        num_classes,
        base_widths=(16, 32, 64, 64),
        extras_cfg=(32, "S", 64, 32, "S", 64),
        mbox=(4, 6, 6, 6),
    ):
        super(SSDLite, self).__init__()
        self.phase = phase
        self.num_classes = num_classes
        self.base = TinyBackbone(widths=base_widths)
        self.L2Norm = L2Norm(base_widths[2], 20)
        self.extras = nn.ModuleList(add_extras(list(extras_cfg), base_widths[-1]))
        source_channels = [base_widths[2], base_widths[3], extras_cfg[2], extras_cfg[5]]
        self.loc = nn.ModuleList([separable_conv(c, m * 4) for c, m in zip(source_channels, mbox)])
        self.conf = nn.ModuleList(
            [separable_conv(c, m * num_classes) for c, m in zip(source_channels, mbox)]
        )
        if phase == "test":
            self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        feats = self.base(x)
        sources = [self.L2Norm(feats["c4"]), feats["c5"]]
        x = feats["c5"]
        for k, v in enumerate(self.extras):
            x = F.relu(v(x), inplace=True)
            if k % 2 == 1:
                sources.append(x)
        loc, conf = [], []
        for s, l, c in zip(sources, self.loc, self.conf):
            loc.append(l(s).permute(0, 2, 3, 1).contiguous())
            conf.append(c(s).permute(0, 2, 3, 1).contiguous())
        loc = torch.cat([o.view(o.size(0), -1) for o in loc], 1)
        conf = torch.cat([o.view(o.size(0), -1) for o in conf], 1)
        if self.phase == "test":
            return loc.view(loc.size(0), -1, 4), self.softmax(
                conf.view(conf.size(0), -1, self.num_classes)
            )
        return loc.view(loc.size(0), -1, 4), conf.view(conf.size(0), -1, self.num_classes)


@heldout("ssd_lite", example=lambda: ((rand(1, 3, 64, 64),), {}))
def ssd_lite() -> nn.Module:
    torch.manual_seed(41)
    return SSDLite("test", 6)


# --- DeepLabV3: ASPP head as nn.Sequential subclasses (torchvision's layout) ------------------


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        modules = [
            nn.Conv2d(
                in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: Tensor) -> Tensor:
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(
        self,
        in_channels: int,
        atrous_rates: List[int],
        out_channels: int = 256,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        modules = [
            nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, bias=False),
                nn.BatchNorm2d(out_channels),
                nn.ReLU(),
            )
        ]
        rates = tuple(atrous_rates)
        for rate in rates:
            modules.append(ASPPConv(in_channels, out_channels, rate))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(dropout),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.project(torch.cat([conv(x) for conv in self.convs], dim=1))


class DeepLabHead(nn.Sequential):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        atrous_rates: Sequence[int] = (12, 24, 36),
        aspp_channels: int = 256,
    ) -> None:
        super().__init__(
            ASPP(in_channels, list(atrous_rates), out_channels=aspp_channels),
            nn.Conv2d(aspp_channels, aspp_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(aspp_channels),
            nn.ReLU(),
            nn.Conv2d(aspp_channels, num_classes, 1),
        )


class DeepLabV3(nn.Module):
    def __init__(self, num_classes: int = 21, widths=(16, 32, 64, 96), **head_kwargs):
        super().__init__()
        self.backbone = TinyBackbone(widths=widths, dilate_last=True)
        self.classifier = DeepLabHead(widths[-1], num_classes, **head_kwargs)
        self.aux_classifier = nn.Sequential(
            OrderedDict(
                [
                    ("conv", conv_bn_relu(widths[-2], 32)),
                    ("drop", nn.Dropout(0.1)),
                    ("cls", nn.Conv2d(32, num_classes, 1)),
                ]
            )
        )

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        input_shape = x.shape[-2:]
        features = self.backbone(x)
        out = self.classifier(features["c5"])
        aux = self.aux_classifier(features["c4"])
        return {
            "out": F.interpolate(out, size=input_shape, mode="bilinear", align_corners=False),
            "aux": F.interpolate(aux, size=input_shape, mode="bilinear", align_corners=False),
        }


@heldout(
    "deeplabv3_aspp",
    example=lambda: ((rand(1, 3, 64, 64),), {}),
    edit=("classifier.0", {"atrous_rates": [2, 4]}),
)
def deeplabv3_aspp() -> nn.Module:
    torch.manual_seed(42)
    return DeepLabV3(num_classes=7, atrous_rates=(2, 4, 6), aspp_channels=48)
