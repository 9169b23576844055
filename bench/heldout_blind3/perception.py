"""Pose estimation (stacked hourglass, OpenPose-lite), OCR (CRNN + CTC), keyword spotting (DS-CNN)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


class Residual(nn.Module):
    def __init__(self, ins, outs):
        super().__init__()
        self.convBlock = nn.Sequential(
            nn.BatchNorm2d(ins), nn.ReLU(inplace=True), nn.Conv2d(ins, outs // 2, 1),
            nn.BatchNorm2d(outs // 2), nn.ReLU(inplace=True), nn.Conv2d(outs // 2, outs // 2, 3, 1, 1),
            nn.BatchNorm2d(outs // 2), nn.ReLU(inplace=True), nn.Conv2d(outs // 2, outs, 1),
        )  # fmt: skip
        self.skipConv = nn.Conv2d(ins, outs, 1) if ins != outs else None

    def forward(self, x):
        skip = x if self.skipConv is None else self.skipConv(x)
        return self.convBlock(x) + skip


class Hourglass(nn.Module):
    """Recursive: each level owns the next, smaller hourglass."""

    def __init__(self, n, f, increase=0):
        super().__init__()
        nf = f + increase
        self.up1 = Residual(f, f)
        self.pool1 = nn.MaxPool2d(2, 2)
        self.low1 = Residual(f, nf)
        self.n = n
        self.low2 = Hourglass(n - 1, nf) if n > 1 else Residual(nf, nf)
        self.low3 = Residual(nf, f)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        up1 = self.up1(x)
        low = self.low3(self.low2(self.low1(self.pool1(x))))
        return up1 + self.up2(low)


class StackedHourglass(nn.Module):
    def __init__(self, nstack, inp_dim, oup_dim, increase=0, depth=3):
        super().__init__()
        self.nstack = nstack
        self.pre = nn.Sequential(
            nn.Conv2d(3, 32, 7, 2, 3), nn.BatchNorm2d(32), nn.ReLU(True),
            Residual(32, 64), nn.MaxPool2d(2, 2), Residual(64, inp_dim),
        )  # fmt: skip
        self.hgs = nn.ModuleList([Hourglass(depth, inp_dim, increase) for _ in range(nstack)])
        self.features = nn.ModuleList(
            [nn.Sequential(Residual(inp_dim, inp_dim), nn.Conv2d(inp_dim, inp_dim, 1), nn.ReLU())
             for _ in range(nstack)]
        )  # fmt: skip
        self.outs = nn.ModuleList([nn.Conv2d(inp_dim, oup_dim, 1) for _ in range(nstack)])
        self.merge_features = nn.ModuleList(
            [nn.Conv2d(inp_dim, inp_dim, 1) for _ in range(nstack - 1)]
        )
        self.merge_preds = nn.ModuleList(
            [nn.Conv2d(oup_dim, inp_dim, 1) for _ in range(nstack - 1)]
        )

    def forward(self, imgs):
        x = self.pre(imgs)
        preds = []
        for i in range(self.nstack):
            feature = self.features[i](self.hgs[i](x))
            pred = self.outs[i](feature)
            preds.append(pred)
            if i < self.nstack - 1:
                x = x + self.merge_preds[i](pred) + self.merge_features[i](feature)
        return torch.stack(preds, 1)


@heldout("stacked_hourglass", example=lambda: ((rand(1, 3, 64, 64),), {}),
         edit=("hgs.0.low2", {"increase": 8}))  # fmt: skip
def stacked_hourglass():
    torch.manual_seed(20)
    return StackedHourglass(nstack=2, inp_dim=64, oup_dim=16)


# OpenPose-lite: a VGG-ish trunk, then stages of two branches (PAFs, heatmaps), from a layer table


def make_layers(block, no_relu_layers):
    layers = []
    for layer_name, v in block.items():
        if "pool" in layer_name:
            layers.append((layer_name, nn.MaxPool2d(kernel_size=v[0], stride=v[1], padding=v[2])))
        else:
            layers.append(
                (layer_name, nn.Conv2d(v[0], v[1], kernel_size=v[2], stride=v[3], padding=v[4]))
            )
            if layer_name not in no_relu_layers:
                layers.append(("relu_" + layer_name, nn.ReLU(inplace=True)))
    return nn.Sequential(OrderedDict(layers))


class OpenPoseLite(nn.Module):
    def __init__(self, n_paf=12, n_heat=7, width=32, n_stages=2):
        super().__init__()
        no_relu = []
        trunk = OrderedDict([
            ("conv1_1", [3, width, 3, 1, 1]), ("pool1", [2, 2, 0]),
            ("conv2_1", [width, width * 2, 3, 1, 1]), ("pool2", [2, 2, 0]),
            ("conv3_1", [width * 2, width * 2, 3, 1, 1]),
        ])  # fmt: skip
        self.model0 = make_layers(trunk, no_relu)
        self.n_stages = n_stages
        c = width * 2
        for s in range(1, n_stages + 1):
            c_in = c if s == 1 else c + n_paf + n_heat
            for branch, n_out in ((1, n_paf), (2, n_heat)):
                name = f"Mconv{s}_L{branch}"
                blk = OrderedDict([
                    (f"{name}_1", [c_in, width, 3, 1, 1]), (f"{name}_2", [width, width, 3, 1, 1]),
                    (f"{name}_out", [width, n_out, 1, 1, 0]),
                ])  # fmt: skip
                no_relu.append(f"{name}_out")
                setattr(self, f"model{s}_{branch}", make_layers(blk, no_relu))

    def forward(self, x):
        feat = self.model0(x)
        h = feat
        for s in range(1, self.n_stages + 1):
            paf = getattr(self, f"model{s}_1")(h)
            heat = getattr(self, f"model{s}_2")(h)
            h = torch.cat([paf, heat, feat], 1)
        return paf, heat


@heldout("openpose_lite", example=lambda: ((rand(1, 3, 48, 48, seed=1),), {}))
def openpose_lite():
    torch.manual_seed(21)
    return OpenPoseLite()


# CRNN: conv stack to a height-1 map, BiLSTM over width, per-frame log-probs for CTC


class BidirectionalLSTM(nn.Module):
    def __init__(self, nIn, nHidden, nOut):
        super().__init__()
        self.rnn = nn.LSTM(nIn, nHidden, bidirectional=True)
        self.embedding = nn.Linear(nHidden * 2, nOut)

    def forward(self, input):
        recurrent, _ = self.rnn(input)
        T, b, h = recurrent.size()
        output = self.embedding(recurrent.view(T * b, h))
        return output.view(T, b, -1)


class CRNN(nn.Module):
    def __init__(self, imgH, nc, nclass, nh, leakyRelu=False):
        super().__init__()
        assert imgH % 16 == 0, "imgH has to be a multiple of 16"
        ks = [3, 3, 3, 3, 3, 3, 2]
        ps = [1, 1, 1, 1, 1, 1, 0]
        ss = [1, 1, 1, 1, 1, 1, 1]
        nm = [16, 32, 64, 64, 96, 96, 96]
        cnn = nn.Sequential()

        def convRelu(i, batchNormalization=False):
            nIn = nc if i == 0 else nm[i - 1]
            nOut = nm[i]
            cnn.add_module(f"conv{i}", nn.Conv2d(nIn, nOut, ks[i], ss[i], ps[i]))
            if batchNormalization:
                cnn.add_module(f"batchnorm{i}", nn.BatchNorm2d(nOut))
            if leakyRelu:
                cnn.add_module(f"relu{i}", nn.LeakyReLU(0.2, inplace=True))
            else:
                cnn.add_module(f"relu{i}", nn.ReLU(True))

        convRelu(0)
        cnn.add_module("pooling0", nn.MaxPool2d(2, 2))
        convRelu(1)
        cnn.add_module("pooling1", nn.MaxPool2d(2, 2))
        convRelu(2, True)
        convRelu(3)
        cnn.add_module("pooling2", nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        convRelu(4, True)
        convRelu(5)
        cnn.add_module("pooling3", nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
        convRelu(6, True)
        self.cnn = cnn
        self.rnn = nn.Sequential(BidirectionalLSTM(96, nh, nh), BidirectionalLSTM(nh, nh, nclass))

    def forward(self, input):
        conv = self.cnn(input)
        b, c, h, w = conv.size()
        assert h == 1, "the height of conv must be 1"
        conv = conv.squeeze(2).permute(2, 0, 1)
        return F.log_softmax(self.rnn(conv), dim=2)


@heldout("crnn_ctc", example=lambda: ((rand(2, 1, 32, 64, seed=2),), {}))
def crnn_ctc():
    torch.manual_seed(22)
    return CRNN(32, 1, 37, 48, leakyRelu=True)


# DS-CNN keyword spotting, configured from a dataclass


@dataclass
class KWSConfig:
    n_mfcc: int = 10
    n_frames: int = 49
    n_classes: int = 12
    first_filter: tuple = (10, 4)
    channels: list = field(default_factory=lambda: [64, 64, 64, 64])
    dropout: float = 0.2


class DepthwiseSeparable(nn.Module):
    def __init__(self, channels, stride=1):
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pw = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = F.relu(self.bn1(self.dw(x)))
        return F.relu(self.bn2(self.pw(x)))


class DSCNN(nn.Module):
    def __init__(self, cfg: KWSConfig = KWSConfig()):  # noqa: B008  (as written in the wild)
        super().__init__()
        c0 = cfg.channels[0]
        kh, kw = cfg.first_filter
        self.conv1 = nn.Conv2d(
            1, c0, (kh, kw), stride=(2, 2), padding=(kh // 2 - 1, kw // 2 - 1), bias=False
        )
        self.bn1 = nn.BatchNorm2d(c0)
        self.blocks = nn.Sequential(*[DepthwiseSeparable(c) for c in cfg.channels[1:]])
        self.dropout = nn.Dropout(cfg.dropout)
        self.fc = nn.Linear(cfg.channels[-1], cfg.n_classes)

    def forward(self, mfcc):
        x = mfcc.unsqueeze(1)  # (b, 1, frames, coeffs)
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.blocks(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(self.dropout(x))


@heldout("ds_cnn_kws", example=lambda: ((rand(4, 49, 10, seed=3),), {}))
def ds_cnn_kws():
    torch.manual_seed(23)
    return DSCNN(KWSConfig(channels=[48, 48, 48, 48]))
