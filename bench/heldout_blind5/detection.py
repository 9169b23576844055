"""Detection written by hand: FCOS on an FPN, a YOLOv5-style model parsed from a dict."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- FCOS


class TinyBackbone(nn.Module):
    """A three-stage conv backbone returning C3..C5 in an OrderedDict."""

    def __init__(self, channels=(16, 32, 64, 96), norm="bn"):
        super().__init__()
        Norm = {"bn": nn.BatchNorm2d, "gn": lambda c: nn.GroupNorm(8, c)}[norm]
        self.stem = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1), Norm(channels[0]), nn.ReLU())
        self.stages = nn.ModuleList()
        for cin, cout in zip(channels[:-1], channels[1:]):
            self.stages.append(
                nn.Sequential(
                    nn.Conv2d(cin, cout, 3, 2, 1, bias=False), Norm(cout), nn.ReLU(inplace=True),
                    nn.Conv2d(cout, cout, 3, 1, 1, bias=False), Norm(cout), nn.ReLU(inplace=True),
                )
            )  # fmt: skip
        self.out_channels = list(channels[1:])

    def forward(self, x):
        x = self.stem(x)
        feats = OrderedDict()
        for i, stage in enumerate(self.stages):
            x = stage(x)
            feats[f"c{i + 3}"] = x
        return feats


class FPN(nn.Module):
    def __init__(self, in_channels_list, out_channels, top_blocks: int = 2, use_p5=True):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            self.inner_blocks.append(nn.Conv2d(in_channels, out_channels, 1))
            self.layer_blocks.append(nn.Conv2d(out_channels, out_channels, 3, padding=1))
        self.use_p5 = use_p5
        p6_in = out_channels if use_p5 else in_channels_list[-1]
        self.p6 = nn.Conv2d(p6_in, out_channels, 3, 2, 1) if top_blocks >= 1 else None
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1) if top_blocks >= 2 else None
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

    def forward(self, feats: OrderedDict):
        xs = list(feats.values())
        last_inner = self.inner_blocks[-1](xs[-1])
        results = [self.layer_blocks[-1](last_inner)]
        for x, inner, layer in zip(
            xs[-2::-1], self.inner_blocks[-2::-1], self.layer_blocks[-2::-1]
        ):
            top_down = F.interpolate(last_inner, size=x.shape[-2:], mode="nearest")
            last_inner = inner(x) + top_down
            results.insert(0, layer(last_inner))
        if self.p6 is not None:
            p6 = self.p6(results[-1] if self.use_p5 else xs[-1])
            results.append(p6)
            if self.p7 is not None:
                results.append(self.p7(F.relu(p6)))
        return results


class Scale(nn.Module):
    def __init__(self, init_value=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.FloatTensor([init_value]))

    def forward(self, input):
        return input * self.scale


class FCOSHead(nn.Module):
    def __init__(self, in_channels, num_classes, num_convs=4, prior_prob=0.01, num_levels=5,
                 centerness_on_reg=True, norm_reg_targets=False):  # fmt: skip
        super().__init__()
        self.centerness_on_reg = centerness_on_reg
        self.norm_reg_targets = norm_reg_targets
        cls_tower, bbox_tower = [], []
        for _ in range(num_convs):
            for tower in (cls_tower, bbox_tower):
                tower.append(nn.Conv2d(in_channels, in_channels, 3, padding=1, bias=True))
                tower.append(nn.GroupNorm(8, in_channels))
                tower.append(nn.ReLU())
        self.add_module("cls_tower", nn.Sequential(*cls_tower))
        self.add_module("bbox_tower", nn.Sequential(*bbox_tower))
        self.cls_logits = nn.Conv2d(in_channels, num_classes, 3, padding=1)
        self.bbox_pred = nn.Conv2d(in_channels, 4, 3, padding=1)
        self.centerness = nn.Conv2d(in_channels, 1, 3, padding=1)
        for layer in [
            *self.cls_tower,
            *self.bbox_tower,
            self.cls_logits,
            self.bbox_pred,
            self.centerness,
        ]:
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                nn.init.constant_(layer.bias, 0)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_prob) / prior_prob))
        self.scales = nn.ModuleList([Scale(init_value=1.0) for _ in range(num_levels)])

    def forward(self, x):
        logits, bbox_reg, centerness = [], [], []
        for level, feature in enumerate(x):
            cls_tower = self.cls_tower(feature)
            box_tower = self.bbox_tower(feature)
            logits.append(self.cls_logits(cls_tower))
            centerness.append(self.centerness(box_tower if self.centerness_on_reg else cls_tower))
            bbox_pred = self.scales[level](self.bbox_pred(box_tower))
            bbox_reg.append(F.relu(bbox_pred) if self.norm_reg_targets else torch.exp(bbox_pred))
        return logits, bbox_reg, centerness


class FCOS(nn.Module):
    def __init__(self, num_classes=20, fpn_channels=32, head_kwargs=None, **backbone_kwargs):
        super().__init__()
        self.backbone = TinyBackbone(**backbone_kwargs)
        self.fpn = FPN(self.backbone.out_channels, fpn_channels)
        self.head = FCOSHead(fpn_channels, num_classes, **(head_kwargs or {}))
        self.fpn_strides = [8, 16, 32, 64, 128]

    def compute_locations(self, features):
        locations = []
        for feature, stride in zip(features, self.fpn_strides):
            h, w = feature.shape[-2:]
            shifts_x = torch.arange(0, w * stride, step=stride, dtype=torch.float32)
            shifts_y = torch.arange(0, h * stride, step=stride, dtype=torch.float32)
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            locations.append(
                torch.stack((shift_x.reshape(-1), shift_y.reshape(-1)), 1) + stride // 2
            )
        return locations

    def forward(self, images):
        features = self.fpn(self.backbone(images))
        box_cls, box_regression, centerness = self.head(features)
        return {
            "locations": self.compute_locations(features),
            "box_cls": box_cls,
            "box_regression": box_regression,
            "centerness": centerness,
        }


@heldout(
    "fcos_fpn",
    lambda: ((rand(2, 3, 64, 64),), {}),
)
def fcos_fpn():
    return FCOS(num_classes=8, head_kwargs={"num_convs": 2, "norm_reg_targets": True})


# --------------------------------------------------------------------------- YOLOv5-style


def make_divisible(x, divisor):
    return math.ceil(x / divisor) * divisor


def autopad(k, p=None):
    return k // 2 if p is None else p


class Conv(nn.Module):
    default_act = nn.SiLU()

    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p), groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = (
            self.default_act
            if act is True
            else act
            if isinstance(act, nn.Module)
            else nn.Identity()
        )

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True, g=1, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_, c2, 3, 1, g=g)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C3(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=True, g=1, e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, g, e=1.0) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class Concat(nn.Module):
    def __init__(self, dimension=1):
        super().__init__()
        self.d = dimension

    def forward(self, x):
        return torch.cat(x, self.d)


class Detect(nn.Module):
    stride = None

    def __init__(self, nc=80, anchors=(), ch=()):
        super().__init__()
        self.nc, self.no = nc, nc + 5
        self.nl, self.na = len(anchors), len(anchors[0]) // 2
        self.register_buffer("anchors", torch.tensor(anchors).float().view(self.nl, -1, 2))
        self.m = nn.ModuleList(nn.Conv2d(x, self.no * self.na, 1) for x in ch)

    def _make_grid(self, nx, ny, i):
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).expand(1, self.na, ny, nx, 2).float() - 0.5
        anchor_grid = (self.anchors[i] * self.stride[i]).view(1, self.na, 1, 1, 2)
        return grid, anchor_grid.expand(1, self.na, ny, nx, 2)

    def forward(self, x):
        z = []
        for i in range(self.nl):
            x[i] = self.m[i](x[i])
            bs, _, ny, nx = x[i].shape
            x[i] = x[i].view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
            if not self.training:
                grid, anchor_grid = self._make_grid(nx, ny, i)
                xy, wh, conf = x[i].sigmoid().split((2, 2, self.nc + 1), 4)
                xy = (xy * 2 + grid) * self.stride[i]
                wh = (wh * 2) ** 2 * anchor_grid
                z.append(torch.cat((xy, wh, conf), 4).view(bs, self.na * nx * ny, self.no))
        return x if self.training else (torch.cat(z, 1), x)


YOLO_CFG = {
    "nc": 3,
    "depth_multiple": 0.33,
    "width_multiple": 0.125,
    "anchors": [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119]],
    "backbone": [
        [-1, 1, "Conv", [64, 6, 2, 2]],
        [-1, 1, "Conv", [128, 3, 2]],
        [-1, 3, "C3", [128]],
        [-1, 1, "Conv", [256, 3, 2]],
        [-1, 6, "C3", [256]],
        [-1, 1, "Conv", [512, 3, 2]],
        [-1, 3, "C3", [512]],
        [-1, 1, "SPPF", [512, 5]],
    ],
    "head": [
        [-1, 1, "Conv", [256, 1, 1]],
        [-1, 1, "nn.Upsample", [None, 2, "nearest"]],
        [[-1, 4], 1, "Concat", [1]],
        [-1, 3, "C3", [256, False]],
        [-1, 1, "Conv", [256, 3, 2]],
        [[-1, 8], 1, "Concat", [1]],
        [-1, 3, "C3", [512, False]],
        [[11, 14], 1, "Detect", ["nc", "anchors"]],
    ],
}


def parse_model(d, ch):
    gd, gw, nc, anchors = d["depth_multiple"], d["width_multiple"], d["nc"], d["anchors"]
    layers, save, c2 = [], [], ch[-1]
    modules = {"Conv": Conv, "C3": C3, "SPPF": SPPF, "Concat": Concat, "Detect": Detect}
    for i, (f, n, m, args) in enumerate(d["backbone"] + d["head"]):
        m = getattr(nn, m[3:]) if m.startswith("nn.") else modules[m]
        args = [{"nc": nc, "anchors": anchors}.get(a, a) if isinstance(a, str) and m is Detect else a
                for a in args]  # fmt: skip
        n = max(round(n * gd), 1) if n > 1 else n
        if m in (Conv, C3, SPPF):
            c1, c2 = ch[f], args[0]
            c2 = make_divisible(c2 * gw, 8)
            args = [c1, c2, *args[1:]]
            if m is C3:
                args.insert(2, n)
                n = 1
        elif m is Concat:
            c2 = sum(ch[x] for x in f)
        elif m is Detect:
            args.append([ch[x] for x in f])
        else:
            c2 = ch[f]
        m_ = nn.Sequential(*(m(*args) for _ in range(n))) if n > 1 else m(*args)
        m_.i, m_.f = i, f
        save.extend(x % i for x in ([f] if isinstance(f, int) else f) if x != -1)
        layers.append(m_)
        if i == 0:
            ch = []
        ch.append(c2)
    return nn.Sequential(*layers), sorted(save)


class DetectionModel(nn.Module):
    def __init__(self, cfg=YOLO_CFG, ch=3):
        super().__init__()
        self.yaml = cfg
        self.model, self.save = parse_model(dict(cfg), ch=[ch])
        m = self.model[-1]
        m.stride = torch.tensor([8.0, 16.0])
        m.anchors /= m.stride.view(-1, 1, 1)
        for mi, s in zip(m.m, m.stride):
            b = mi.bias.view(m.na, -1)
            b.data[:, 4] += math.log(8 / (640 / s) ** 2)
            b.data[:, 5:] += math.log(0.6 / (m.nc - 0.99))

    def forward(self, x):
        y = []
        for m in self.model:
            if m.f != -1:
                x = y[m.f] if isinstance(m.f, int) else [x if j == -1 else y[j] for j in m.f]
            x = m(x)
            y.append(x if m.i in self.save else None)
        return x


@heldout(
    "yolov5_style",
    lambda: ((rand(2, 3, 64, 64),), {}),
    edit=("model.6.m.0", {"e": 0.5}),
    train=True,
)
def yolov5_style():
    return DetectionModel(YOLO_CFG)
