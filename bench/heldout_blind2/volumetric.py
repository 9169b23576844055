# ruff: noqa: UP008, UP032  (the authors' habits are kept: this set measures code as people write it)
"""Volumetric / medical: a 3D U-Net (Cicek et al.) and a V-Net (Milletari et al.)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --- 3D U-Net -----------------------------------------------------------------------------------


def create_conv(in_channels, out_channels, kernel_size, order, num_groups, padding):
    """A conv with its norm and activation, in the order given by a string such as 'gcr'
    (g=GroupNorm, b=BatchNorm, c=Conv, r=ReLU, l=LeakyReLU, e=ELU)."""
    assert "c" in order, "Conv layer MUST be present"
    assert order[0] not in "rle", "Non-linearity cannot be the first operation in the layer"
    modules = []
    for i, char in enumerate(order):
        if char == "r":
            modules.append(("ReLU", nn.ReLU(inplace=True)))
        elif char == "l":
            modules.append(("LeakyReLU", nn.LeakyReLU(negative_slope=0.1, inplace=True)))
        elif char == "e":
            modules.append(("ELU", nn.ELU(inplace=True)))
        elif char == "c":
            bias = not ("g" in order or "b" in order)
            modules.append(
                (
                    "conv",
                    nn.Conv3d(in_channels, out_channels, kernel_size, padding=padding, bias=bias),
                )
            )
        elif char == "g":
            is_before_conv = i < order.index("c")
            num_channels = in_channels if is_before_conv else out_channels
            if num_channels < num_groups:
                num_groups = 1
            assert num_channels % num_groups == 0, (
                f"Expected number of channels in input to be divisible by num_groups. num_channels={num_channels}, num_groups={num_groups}"
            )
            modules.append(
                ("groupnorm", nn.GroupNorm(num_groups=num_groups, num_channels=num_channels))
            )
        elif char == "b":
            is_before_conv = i < order.index("c")
            modules.append(
                ("batchnorm", nn.BatchNorm3d(in_channels if is_before_conv else out_channels))
            )
        else:
            raise ValueError(
                f"Unsupported layer type '{char}'. MUST be one of ['b', 'g', 'r', 'l', 'e', 'c']"
            )
    return modules


class SingleConv(nn.Sequential):
    def __init__(
        self, in_channels, out_channels, kernel_size=3, order="gcr", num_groups=8, padding=1
    ):
        super(SingleConv, self).__init__()
        for name, module in create_conv(
            in_channels, out_channels, kernel_size, order, num_groups, padding=padding
        ):
            self.add_module(name, module)


class DoubleConv(nn.Sequential):
    def __init__(
        self,
        in_channels,
        out_channels,
        encoder,
        kernel_size=3,
        order="gcr",
        num_groups=8,
        padding=1,
    ):
        super(DoubleConv, self).__init__()
        if encoder:
            conv1_in_channels = in_channels
            conv1_out_channels = out_channels // 2
            if conv1_out_channels < in_channels:
                conv1_out_channels = in_channels
            conv2_in_channels, conv2_out_channels = conv1_out_channels, out_channels
        else:
            conv1_in_channels, conv1_out_channels = in_channels, out_channels
            conv2_in_channels, conv2_out_channels = out_channels, out_channels
        self.add_module(
            "SingleConv1",
            SingleConv(
                conv1_in_channels,
                conv1_out_channels,
                kernel_size,
                order,
                num_groups,
                padding=padding,
            ),
        )
        self.add_module(
            "SingleConv2",
            SingleConv(
                conv2_in_channels,
                conv2_out_channels,
                kernel_size,
                order,
                num_groups,
                padding=padding,
            ),
        )


class Encoder(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        conv_kernel_size=3,
        apply_pooling=True,
        pool_kernel_size=2,
        pool_type="max",
        basic_module=DoubleConv,
        conv_layer_order="gcr",
        num_groups=8,
    ):
        super(Encoder, self).__init__()
        assert pool_type in ["max", "avg"]
        if apply_pooling:
            self.pooling = (
                nn.MaxPool3d(kernel_size=pool_kernel_size)
                if pool_type == "max"
                else nn.AvgPool3d(kernel_size=pool_kernel_size)
            )
        else:
            self.pooling = None
        self.basic_module = basic_module(
            in_channels,
            out_channels,
            encoder=True,
            kernel_size=conv_kernel_size,
            order=conv_layer_order,
            num_groups=num_groups,
        )

    def forward(self, x):
        if self.pooling is not None:
            x = self.pooling(x)
        return self.basic_module(x)


class Decoder(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        conv_kernel_size=3,
        scale_factor=(2, 2, 2),
        basic_module=DoubleConv,
        conv_layer_order="gcr",
        num_groups=8,
        mode="nearest",
    ):
        super(Decoder, self).__init__()
        self.mode = mode
        self.scale_factor = scale_factor
        self.basic_module = basic_module(
            in_channels,
            out_channels,
            encoder=False,
            kernel_size=conv_kernel_size,
            order=conv_layer_order,
            num_groups=num_groups,
        )

    def forward(self, encoder_features, x):
        x = F.interpolate(x, size=encoder_features.size()[2:], mode=self.mode)
        x = torch.cat((encoder_features, x), dim=1)
        return self.basic_module(x)


def number_of_features_per_level(init_channel_number, num_levels):
    return [init_channel_number * 2**k for k in range(num_levels)]


class UNet3D(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        final_sigmoid=True,
        f_maps=64,
        layer_order="gcr",
        num_groups=8,
        num_levels=4,
        **kwargs,
    ):
        super(UNet3D, self).__init__()
        if isinstance(f_maps, int):
            f_maps = number_of_features_per_level(f_maps, num_levels=num_levels)
        encoders = []
        for i, out_feature_num in enumerate(f_maps):
            if i == 0:
                encoder = Encoder(
                    in_channels,
                    out_feature_num,
                    apply_pooling=False,
                    conv_layer_order=layer_order,
                    num_groups=num_groups,
                )
            else:
                encoder = Encoder(
                    f_maps[i - 1],
                    out_feature_num,
                    conv_layer_order=layer_order,
                    num_groups=num_groups,
                    **kwargs,
                )
            encoders.append(encoder)
        self.encoders = nn.ModuleList(encoders)

        decoders = []
        reversed_f_maps = list(reversed(f_maps))
        for i in range(len(reversed_f_maps) - 1):
            in_feature_num = reversed_f_maps[i] + reversed_f_maps[i + 1]
            decoders.append(
                Decoder(
                    in_feature_num,
                    reversed_f_maps[i + 1],
                    conv_layer_order=layer_order,
                    num_groups=num_groups,
                )
            )
        self.decoders = nn.ModuleList(decoders)

        self.final_conv = nn.Conv3d(f_maps[0], out_channels, 1)
        self.final_activation = nn.Sigmoid() if final_sigmoid else nn.Softmax(dim=1)

    def forward(self, x):
        encoders_features = []
        for encoder in self.encoders:
            x = encoder(x)
            encoders_features.insert(0, x)
        encoders_features = encoders_features[1:]
        for decoder, encoder_features in zip(self.decoders, encoders_features):
            x = decoder(encoder_features, x)
        x = self.final_conv(x)
        if not self.training:
            x = self.final_activation(x)
        return x


@heldout(
    "unet3d",
    example=lambda: ((rand(1, 1, 8, 16, 16),), {}),
    edit=("encoders.1", {"pool_type": "avg"}),
)
def unet3d() -> nn.Module:
    torch.manual_seed(30)
    return UNet3D(1, 2, final_sigmoid=False, f_maps=8, num_groups=4, num_levels=3)


# --- V-Net ----------------------------------------------------------------------------------------


def passthrough(x, **kwargs):
    return x


def ELUCons(elu, nchan):
    if elu:
        return nn.ELU(inplace=True)
    else:
        return nn.PReLU(nchan)


class ContBatchNorm3d(nn.modules.batchnorm._BatchNorm):
    """Batch norm that always normalises with the batch's statistics (the V-Net authors' choice)."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError("expected 5D input (got {}D input)".format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        return F.batch_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            True,
            self.momentum,
            self.eps,
        )


class LUConv(nn.Module):
    def __init__(self, nchan, elu):
        super(LUConv, self).__init__()
        self.relu1 = ELUCons(elu, nchan)
        self.conv1 = nn.Conv3d(nchan, nchan, kernel_size=5, padding=2)
        self.bn1 = ContBatchNorm3d(nchan)

    def forward(self, x):
        return self.relu1(self.bn1(self.conv1(x)))


def _make_nConv(nchan, depth, elu):
    layers = []
    for _ in range(depth):
        layers.append(LUConv(nchan, elu))
    return nn.Sequential(*layers)


class InputTransition(nn.Module):
    def __init__(self, outChans, elu, inChans=1):
        super(InputTransition, self).__init__()
        self.outChans, self.inChans = outChans, inChans
        self.conv1 = nn.Conv3d(inChans, outChans, kernel_size=5, padding=2)
        self.bn1 = ContBatchNorm3d(outChans)
        self.relu1 = ELUCons(elu, outChans)

    def forward(self, x):
        out = self.bn1(self.conv1(x))
        # repeat the input across channels for the residual
        x16 = x.repeat(1, self.outChans // self.inChans, 1, 1, 1)
        return self.relu1(torch.add(out, x16))


class DownTransition(nn.Module):
    def __init__(self, inChans, nConvs, elu, dropout=False):
        super(DownTransition, self).__init__()
        outChans = 2 * inChans
        self.down_conv = nn.Conv3d(inChans, outChans, kernel_size=2, stride=2)
        self.bn1 = ContBatchNorm3d(outChans)
        self.do1 = passthrough
        self.relu1 = ELUCons(elu, outChans)
        self.relu2 = ELUCons(elu, outChans)
        if dropout:
            self.do1 = nn.Dropout3d()
        self.ops = _make_nConv(outChans, nConvs, elu)

    def forward(self, x):
        down = self.relu1(self.bn1(self.down_conv(x)))
        out = self.do1(down)
        out = self.ops(out)
        return self.relu2(torch.add(out, down))


class UpTransition(nn.Module):
    def __init__(self, inChans, outChans, nConvs, elu, dropout=False):
        super(UpTransition, self).__init__()
        self.up_conv = nn.ConvTranspose3d(inChans, outChans // 2, kernel_size=2, stride=2)
        self.bn1 = ContBatchNorm3d(outChans // 2)
        self.do1 = passthrough
        self.do2 = nn.Dropout3d()
        self.relu1 = ELUCons(elu, outChans // 2)
        self.relu2 = ELUCons(elu, outChans)
        if dropout:
            self.do1 = nn.Dropout3d()
        self.ops = _make_nConv(outChans, nConvs, elu)

    def forward(self, x, skipx):
        out = self.do1(x)
        skipxdo = self.do2(skipx)
        out = self.relu1(self.bn1(self.up_conv(out)))
        xcat = torch.cat((out, skipxdo), 1)
        out = self.ops(xcat)
        return self.relu2(torch.add(out, xcat))


class OutputTransition(nn.Module):
    def __init__(self, inChans, elu, nll):
        super(OutputTransition, self).__init__()
        self.conv1 = nn.Conv3d(inChans, 2, kernel_size=5, padding=2)
        self.bn1 = ContBatchNorm3d(2)
        self.conv2 = nn.Conv3d(2, 2, kernel_size=1)
        self.relu1 = ELUCons(elu, 2)
        self.softmax = F.log_softmax if nll else F.softmax

    def forward(self, x):
        out = self.conv2(self.relu1(self.bn1(self.conv1(x))))
        # make channels the last axis, flatten
        out = out.permute(0, 2, 3, 4, 1).contiguous()
        out = out.view(out.numel() // 2, 2)
        return self.softmax(out, dim=1)


class VNet(nn.Module):
    def __init__(self, elu=True, nll=False, base=16):
        super(VNet, self).__init__()
        self.in_tr = InputTransition(base, elu)
        self.down_tr32 = DownTransition(base, 1, elu)
        self.down_tr64 = DownTransition(base * 2, 2, elu)
        self.down_tr128 = DownTransition(base * 4, 2, elu, dropout=True)
        self.up_tr128 = UpTransition(base * 8, base * 8, 2, elu, dropout=True)
        self.up_tr64 = UpTransition(base * 8, base * 4, 2, elu)
        self.up_tr32 = UpTransition(base * 4, base * 2, 1, elu)
        self.out_tr = OutputTransition(base * 2, elu, nll)

    def forward(self, x):
        out16 = self.in_tr(x)
        out32 = self.down_tr32(out16)
        out64 = self.down_tr64(out32)
        out128 = self.down_tr128(out64)
        out = self.up_tr128(out128, out64)
        out = self.up_tr64(out, out32)
        out = self.up_tr32(out, out16)
        return self.out_tr(out)


@heldout(
    "vnet",
    example=lambda: ((rand(1, 1, 8, 16, 16),), {}),
    edit=("down_tr64", {"dropout": True}),
)
def vnet() -> nn.Module:
    torch.manual_seed(31)
    return VNet(elu=False, nll=True, base=4)
