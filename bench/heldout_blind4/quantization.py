"""Quantization-aware training: LSQ fake quantization with learnable step sizes.

A quantizer module whose step is a parameter initialised from the first batch (tracked by a bool
buffer), straight-through rounding, and Conv2d/Linear subclasses with extra bit-width arguments.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# --------------------------------------------------------------------------- LSQ fake quantization


def grad_scale(x, scale):
    return (x - x * scale).detach() + x * scale


def round_pass(x):
    return (x.round() - x).detach() + x


class LSQQuantizer(nn.Module):
    """Learned step size quantization (Esser et al.); the step is initialised from the first batch."""

    def __init__(self, bits=8, signed=True, per_channel=False, channels=1):
        super().__init__()
        self.bits, self.signed = bits, signed
        if signed:
            self.qn, self.qp = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        else:
            self.qn, self.qp = 0, 2**bits - 1
        self.step = nn.Parameter(torch.ones(channels if per_channel else 1))
        self.per_channel = per_channel
        self.register_buffer("initialized", torch.zeros(1, dtype=torch.bool))

    def forward(self, x):
        if not bool(self.initialized):
            with torch.no_grad():
                dims = tuple(range(1, x.dim())) if self.per_channel else None
                mean_abs = x.abs().mean(dim=dims) if dims else x.abs().mean()
                self.step.copy_(2 * mean_abs / math.sqrt(self.qp))
                self.initialized.fill_(True)
        g = 1.0 / math.sqrt(x.numel() * self.qp)
        s = grad_scale(self.step, g)
        if self.per_channel:
            s = s.view(-1, *([1] * (x.dim() - 1)))
        return round_pass((x / s).clamp(self.qn, self.qp)) * s


class QConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, w_bits=4, a_bits=8,
                 quant_act=True):  # fmt: skip
        super().__init__(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias
        )
        self.w_bits, self.a_bits = w_bits, a_bits
        self.weight_quant = LSQQuantizer(
            w_bits, signed=True, per_channel=True, channels=out_channels
        )
        self.act_quant = LSQQuantizer(a_bits, signed=False) if quant_act else nn.Identity()

    def forward(self, x):
        return self._conv_forward(self.act_quant(x), self.weight_quant(self.weight), self.bias)


class QLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, w_bits=4, a_bits=8):
        super().__init__(in_features, out_features, bias)
        self.weight_quant = LSQQuantizer(w_bits, signed=True)
        self.act_quant = LSQQuantizer(a_bits, signed=False)

    def forward(self, x):
        return F.linear(self.act_quant(x), self.weight_quant(self.weight), self.bias)


def qat_cnn(width_mult=1.0, w_bits=4, a_bits=8, num_classes=10):
    c = [int(w * width_mult) for w in (16, 32, 64)]
    return nn.Sequential(
        nn.Conv2d(3, c[0], 3, padding=1, bias=False),  # first layer stays full precision
        nn.BatchNorm2d(c[0]),
        nn.ReLU(inplace=True),
        QConv2d(c[0], c[1], 3, stride=2, padding=1, bias=False, w_bits=w_bits, a_bits=a_bits),
        nn.BatchNorm2d(c[1]),
        nn.ReLU(inplace=True),
        QConv2d(c[1], c[2], 3, stride=2, padding=1, bias=False, w_bits=w_bits, a_bits=a_bits),
        nn.BatchNorm2d(c[2]),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        QLinear(c[2], num_classes, w_bits=8, a_bits=8),  # and so does the last, at 8 bits
    )


def _warm_qat():
    model = qat_cnn(width_mult=0.5)
    model.eval()
    with torch.no_grad():
        model(
            rand(4, 3, 16, 16, seed=7)
        )  # calibrate the LSQ steps once, as a training loop's first step does
    return model


@heldout("lsq_qat_cnn", lambda: ((rand(2, 3, 16, 16),), {}), edit=("6", {"w_bits": 3}))
def lsq_qat_cnn():
    return _warm_qat()
