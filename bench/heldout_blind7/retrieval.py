"""Image retrieval: NetVLAD on a VGG-ish trunk and a GeM-pooled ResNet with a whitening layer."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parameter import Parameter

from .spec import heldout, rand


class NetVLAD(nn.Module):
    """NetVLAD layer implementation (Arandjelovic et al. 2016)."""

    def __init__(self, num_clusters=64, dim=128, normalize_input=True, vladv2=False):
        super().__init__()
        self.num_clusters = num_clusters
        self.dim = dim
        self.alpha = 0
        self.vladv2 = vladv2
        self.normalize_input = normalize_input
        self.conv = nn.Conv2d(dim, num_clusters, kernel_size=(1, 1), bias=vladv2)
        self.centroids = nn.Parameter(torch.rand(num_clusters, dim))

    def init_params(self, clsts, traindescs):
        clstsAssign = clsts / torch.linalg.norm(clsts, dim=1, keepdim=True)
        dots = clstsAssign @ traindescs.T
        dots = dots.sort(0, descending=True)[0]
        self.alpha = (-torch.log(torch.tensor(0.01)) / (dots[0, :] - dots[1, :]).mean()).item()
        self.centroids = nn.Parameter(clsts.clone())
        self.conv.weight = nn.Parameter((2.0 * self.alpha * clstsAssign).unsqueeze(2).unsqueeze(3))
        self.conv.bias = None

    def forward(self, x):
        N, C = x.shape[:2]
        if self.normalize_input:
            x = F.normalize(x, p=2, dim=1)  # across descriptor dim

        # soft-assignment
        soft_assign = self.conv(x).view(N, self.num_clusters, -1)
        soft_assign = F.softmax(soft_assign, dim=1)

        x_flatten = x.view(N, C, -1)

        # calculate residuals to each clusters
        vlad = torch.zeros(
            [N, self.num_clusters, C], dtype=x.dtype, layout=x.layout, device=x.device
        )
        for C_ in range(self.num_clusters):  # slower than non-looped, but lower memory usage
            residual = x_flatten.unsqueeze(0).permute(1, 0, 2, 3) - self.centroids[
                C_ : C_ + 1, :
            ].expand(x_flatten.size(-1), -1, -1).permute(1, 2, 0).unsqueeze(0)
            residual *= soft_assign[:, C_ : C_ + 1, :].unsqueeze(2)
            vlad[:, C_ : C_ + 1, :] = residual.sum(dim=-1)

        vlad = F.normalize(vlad, p=2, dim=2)  # intra-normalization
        vlad = vlad.view(x.size(0), -1)  # flatten
        vlad = F.normalize(vlad, p=2, dim=1)  # L2 normalize
        return vlad


class L2Norm(nn.Module):
    def __init__(self, dim=1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.normalize(input, p=2, dim=self.dim)


class Flatten(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), -1)


def vgg_trunk(cfg=(16, "M", 32, "M", 64, 64, "M", 64)):
    layers, c = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(c, v, 3, padding=1), nn.ReLU(inplace=True)]
            c = v
    # drop the last ReLU, as in the pittsburgh training script
    return nn.Sequential(*layers[:-1]), c


POOLINGS = {
    "netvlad": lambda dim, opt: NetVLAD(num_clusters=opt.num_clusters, dim=dim, vladv2=opt.vladv2),
    "max": lambda dim, opt: nn.Sequential(nn.AdaptiveMaxPool2d((1, 1)), Flatten(), L2Norm()),
    "avg": lambda dim, opt: nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), Flatten(), L2Norm()),
}


class _Opt:
    pooling = "netvlad"
    num_clusters = 16
    vladv2 = False


def build_place_model(opt=_Opt):
    encoder, encoder_dim = vgg_trunk()
    model = nn.Module()
    model.add_module("encoder", encoder)
    model.add_module("pool", POOLINGS[opt.pooling.lower()](encoder_dim, opt))
    return nn.Sequential(model.encoder, model.pool)


@heldout(
    "netvlad_pitts",
    lambda: ((rand(2, 3, 64, 64),), {}),
    edit=("1", {"num_clusters": 8, "vladv2": True}),
)
def build_netvlad():
    return build_place_model()


# ----------------------------------------------------------------------------------------------
# GeM pooling (Radenovic et al. 2018) on a ResNet-like trunk with a learned whitening
# ----------------------------------------------------------------------------------------------


def gem(x, p=3, eps=1e-6):
    return F.avg_pool2d(x.clamp(min=eps).pow(p), (x.size(-2), x.size(-1))).pow(1.0 / p)


class GeM(nn.Module):
    def __init__(self, p=3, eps=1e-6):
        super().__init__()
        self.p = Parameter(torch.ones(1) * p)
        self.eps = eps

    def forward(self, x):
        return gem(x, p=self.p, eps=self.eps)

    def __repr__(self):
        return (
            self.__class__.__name__
            + "("
            + "p="
            + f"{self.p.data.tolist()[0]:.4f}"
            + ", "
            + "eps="
            + str(self.eps)
            + ")"
        )


class GeMmp(nn.Module):
    """Multi-p GeM: one learned exponent per channel."""

    def __init__(self, p=3, mp=1, eps=1e-6):
        super().__init__()
        self.p = Parameter(torch.ones(mp) * p)
        self.mp = mp
        self.eps = eps

    def forward(self, x):
        return gem(x, p=self.p.unsqueeze(-1).unsqueeze(-1), eps=self.eps)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        residual = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            residual = self.downsample(x)
        return self.relu(out + residual)


POOLING = {"gem": GeM, "gemmp": GeMmp, "mac": lambda **kw: nn.AdaptiveMaxPool2d(1)}


class ImageRetrievalNet(nn.Module):
    def __init__(self, features, lwhiten, pool, whiten, meta):
        super().__init__()
        self.features = nn.Sequential(*features)
        self.lwhiten = lwhiten
        self.pool = pool
        self.whiten = whiten
        self.norm = L2Norm()
        self.meta = meta

    def forward(self, x):
        o = self.features(x)
        if self.lwhiten is not None:
            s = o.size()
            o = o.permute(0, 2, 3, 1).contiguous().view(-1, s[1])
            o = self.lwhiten(o)
            o = o.view(s[0], s[2], s[3], self.lwhiten.out_features).permute(0, 3, 1, 2)
        o = self.norm(self.pool(o)).squeeze(-1).squeeze(-1)
        if self.whiten is not None:
            o = self.norm(self.whiten(o))
        return o.permute(1, 0)


def init_network(params={}):  # noqa: B006
    architecture = params.get("architecture", "resnet-tiny")
    local_whitening = params.get("local_whitening", False)
    pooling = params.get("pooling", "gem")
    whitening = params.get("whitening", False)
    mean = params.get("mean", [0.485, 0.456, 0.406])
    std = params.get("std", [0.229, 0.224, 0.225])
    widths = params.get("widths", [8, 16])

    inplanes = 16
    features = [
        nn.Conv2d(3, inplanes, 7, 2, 3, bias=False),
        nn.BatchNorm2d(inplanes),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    for planes in widths:
        down = nn.Sequential(
            nn.Conv2d(inplanes, planes * 4, 1, 2, bias=False), nn.BatchNorm2d(planes * 4)
        )
        features.append(Bottleneck(inplanes, planes, 2, down))
        inplanes = planes * 4
    dim = inplanes

    lwhiten = nn.Linear(dim, dim, bias=True) if local_whitening else None
    pool = POOLING[pooling](mp=dim) if pooling == "gemmp" else POOLING[pooling]()
    whiten = nn.Linear(dim, dim, bias=True) if whitening else None
    meta = {
        "architecture": architecture,
        "local_whitening": local_whitening,
        "pooling": pooling,
        "whitening": whitening,
        "mean": mean,
        "std": std,
        "outputdim": dim,
    }
    return ImageRetrievalNet(features, lwhiten, pool, whiten, meta)


@heldout("gem_retrieval", lambda: ((rand(2, 3, 64, 64),), {}))
def build_gem():
    return init_network({"pooling": "gemmp", "whitening": True, "local_whitening": True})
