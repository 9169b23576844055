"""Classifiers as papers' code builds them: DenseNet with add_module, MobileNetV2's settings table,
a spatial transformer (a dry forward in the constructor), a ConvNeXt-like net whose drop rates
come from torch.linspace(...).item()."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .case import args, case, randn

# --- DenseNet-BC (add_module in loops, growth_rate, block_config, compression) -------------------


class _DenseLayer(nn.Sequential):
    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
        super(_DenseLayer, self).__init__()
        (self.add_module("norm1", nn.BatchNorm2d(num_input_features)),)
        (self.add_module("relu1", nn.ReLU(inplace=True)),)
        (
            self.add_module(
                "conv1",
                nn.Conv2d(
                    num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False
                ),
            ),
        )
        (self.add_module("norm2", nn.BatchNorm2d(bn_size * growth_rate)),)
        (self.add_module("relu2", nn.ReLU(inplace=True)),)
        (
            self.add_module(
                "conv2",
                nn.Conv2d(
                    bn_size * growth_rate,
                    growth_rate,
                    kernel_size=3,
                    stride=1,
                    padding=1,
                    bias=False,
                ),
            ),
        )
        self.drop_rate = drop_rate

    def forward(self, x):
        new_features = super(_DenseLayer, self).forward(x)
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return torch.cat([x, new_features], 1)


class _DenseBlock(nn.Sequential):
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
        super(_DenseBlock, self).__init__()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate
            )
            self.add_module("denselayer%d" % (i + 1), layer)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super(_Transition, self).__init__()
        self.add_module("norm", nn.BatchNorm2d(num_input_features))
        self.add_module("relu", nn.ReLU(inplace=True))
        self.add_module(
            "conv",
            nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False),
        )
        self.add_module("pool", nn.AvgPool2d(kernel_size=2, stride=2))


class DenseNet(nn.Module):
    def __init__(
        self,
        growth_rate=12,
        block_config=(2, 2, 2),
        compression=0.5,
        num_init_features=16,
        bn_size=4,
        drop_rate=0,
        num_classes=10,
    ):
        super(DenseNet, self).__init__()
        self.features = nn.Sequential()
        self.features.add_module(
            "conv0", nn.Conv2d(3, num_init_features, kernel_size=3, padding=1, bias=False)
        )
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers=num_layers,
                num_input_features=num_features,
                bn_size=bn_size,
                growth_rate=growth_rate,
                drop_rate=drop_rate,
            )
            self.features.add_module("denseblock%d" % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(
                    num_input_features=num_features,
                    num_output_features=int(num_features * compression),
                )
                self.features.add_module("transition%d" % (i + 1), trans)
                num_features = int(num_features * compression)
        self.features.add_module("norm_final", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)

    def forward(self, x):
        features = self.features(x)
        out = F.adaptive_avg_pool2d(F.relu(features, inplace=True), (1, 1))
        return self.classifier(torch.flatten(out, 1))


case(
    "densenet_add_module",
    lambda: DenseNet(growth_rate=6, block_config=(2, 3), num_init_features=8, drop_rate=0.1),
    args(lambda: randn(2, 3, 16, 16)),
    edit=("classifier", {"bias": False}),
    styles="add_module in loops, int(num_features * compression), nn.Sequential subclasses",
)

# --- MobileNetV2 (settings table, _make_divisible, width_mult) ------------------------------------


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1):
        padding = (kernel_size - 1) // 2
        super(ConvBNReLU, self).__init__(
            nn.Conv2d(
                in_planes, out_planes, kernel_size, stride, padding, groups=groups, bias=False
            ),
            nn.BatchNorm2d(out_planes),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super(InvertedResidual, self).__init__()
        self.stride = stride
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1))
        layers.extend(
            [
                ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                nn.BatchNorm2d(oup),
            ]
        )
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(
        self, num_classes=10, width_mult=1.0, inverted_residual_setting=None, round_nearest=8
    ):
        super(MobileNetV2, self).__init__()
        input_channel = 16
        last_channel = 64
        if inverted_residual_setting is None:
            inverted_residual_setting = [[1, 8, 1, 1], [6, 12, 2, 2], [6, 16, 2, 2]]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError(
                "inverted_residual_setting should be non-empty and a 4-element list, got {}".format(
                    inverted_residual_setting
                )
            )
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [ConvBNReLU(3, input_channel, stride=2)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(
                    InvertedResidual(
                        input_channel, output_channel, s if i == 0 else 1, expand_ratio=t
                    )
                )
                input_channel = output_channel
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(self.last_channel, num_classes))

    def forward(self, x):
        x = self.features(x)
        return self.classifier(nn.functional.adaptive_avg_pool2d(x, 1).reshape(x.shape[0], -1))


case(
    "mobilenetv2_table",
    lambda: MobileNetV2(num_classes=5, width_mult=0.75),
    args(lambda: randn(2, 3, 32, 32)),
    edit=("classifier.0", {"p": 0.3}),
    styles="settings table [t, c, n, s], _make_divisible(c * width_mult), nn.Sequential subclass",
)

# --- Spatial transformer network (fc_loc initialised to the identity) ----------------------------


class STN(nn.Module):
    def __init__(self, in_size=(1, 28, 28), n_classes=10):
        super(STN, self).__init__()
        c, h, w = in_size
        self.localization = nn.Sequential(
            nn.Conv2d(c, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )
        with torch.no_grad():
            n = self.localization(torch.zeros(1, c, h, w)).numel()
        self.fc_loc = nn.Sequential(nn.Linear(n, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(c * h * w, n_classes))

    def stn(self, x):
        xs = self.localization(x)
        theta = self.fc_loc(xs.flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        return self.head(self.stn(x))


case(
    "spatial_transformer",
    lambda: STN((1, 28, 28)),
    args(lambda: randn(2, 1, 28, 28)),
    edit=("fc_loc.1", {"inplace": False}),
    styles="c, h, w = in_size, a dry forward in the constructor, weights set after building",
)

# --- ConvNeXt-like, drop rates from torch.linspace(...).item(), LayerNorm for channels_first ------


class LayerNorm2d(nn.Module):
    def __init__(self, normalized_shape, eps=1e-6, data_format="channels_last"):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))
        self.eps = eps
        self.data_format = data_format
        if self.data_format not in ["channels_last", "channels_first"]:
            raise NotImplementedError
        self.normalized_shape = (normalized_shape,)

    def forward(self, x):
        if self.data_format == "channels_last":
            return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep = 1 - self.drop_prob
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)
        return x * mask / keep


class Block(nn.Module):
    def __init__(self, dim, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = LayerNorm2d(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = (
            nn.Parameter(layer_scale_init_value * torch.ones((dim)), requires_grad=True)
            if layer_scale_init_value > 0
            else None
        )
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x):
        inp = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.act(self.pwconv1(self.norm(x))))
        if self.gamma is not None:
            x = self.gamma * x
        return inp + self.drop_path(x.permute(0, 3, 1, 2))


class ConvNeXt(nn.Module):
    def __init__(
        self,
        in_chans=3,
        num_classes=10,
        depths=[1, 1, 2],
        dims=[8, 16, 32],
        drop_path_rate=0.0,
        layer_scale_init_value=1e-6,
        head_init_scale=1.0,
    ):
        super().__init__()
        self.downsample_layers = nn.ModuleList()
        stem = nn.Sequential(
            nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
            LayerNorm2d(dims[0], eps=1e-6, data_format="channels_first"),
        )
        self.downsample_layers.append(stem)
        for i in range(len(dims) - 1):
            self.downsample_layers.append(
                nn.Sequential(
                    LayerNorm2d(dims[i], eps=1e-6, data_format="channels_first"),
                    nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2),
                )
            )
        self.stages = nn.ModuleList()
        dp_rates = [x.item() for x in torch.linspace(0, drop_path_rate, sum(depths))]
        cur = 0
        for i in range(len(dims)):
            self.stages.append(
                nn.Sequential(
                    *[
                        Block(
                            dim=dims[i],
                            drop_path=dp_rates[cur + j],
                            layer_scale_init_value=layer_scale_init_value,
                        )
                        for j in range(depths[i])
                    ]
                )
            )
            cur += depths[i]
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], num_classes)
        self.head.weight.data.mul_(head_init_scale)

    def forward(self, x):
        for i in range(len(self.stages)):
            x = self.stages[i](self.downsample_layers[i](x))
        return self.head(self.norm(x.mean([-2, -1])))


case(
    "convnext_linspace",
    lambda: ConvNeXt(depths=[1, 1, 2], dims=[8, 16, 32], drop_path_rate=0.1),
    args(lambda: randn(2, 3, 32, 32)),
    edit=("norm", {"eps": 1e-5}),
    styles="[x.item() for x in torch.linspace(...)], dp_rates[cur + j], a parameter or None",
)
