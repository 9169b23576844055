"""EEG and ECG classifiers: EEGNet, a shallow filter-bank ConvNet, a 1-D ResNet for 12-lead ECG."""

import math

import torch
import torch.nn as nn

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# EEGNet (Lawhern et al., 2018): temporal conv, depthwise spatial conv with a max-norm
# constraint, separable conv
# --------------------------------------------------------------------------------------------


class Conv2dWithConstraint(nn.Conv2d):
    def __init__(self, *args, max_norm=1, **kwargs):
        self.max_norm = max_norm
        super().__init__(*args, **kwargs)

    def forward(self, x):
        self.weight.data = torch.renorm(self.weight.data, p=2, dim=0, maxnorm=self.max_norm)
        return super().forward(x)


class LinearWithConstraint(nn.Linear):
    def __init__(self, *args, max_norm=1, **kwargs):
        self.max_norm = max_norm
        super().__init__(*args, **kwargs)

    def forward(self, x):
        self.weight.data = torch.renorm(self.weight.data, p=2, dim=0, maxnorm=self.max_norm)
        return super().forward(x)


class EEGNet(nn.Module):
    def __init__(
        self,
        nb_classes,
        Chans=64,
        Samples=128,
        dropoutRate=0.5,
        kernLength=64,
        F1=8,
        D=2,
        F2=16,
        norm_rate=0.25,
        dropoutType="Dropout",
    ):
        super().__init__()
        if dropoutType == "SpatialDropout2D":
            dropoutType = nn.Dropout2d
        elif dropoutType == "Dropout":
            dropoutType = nn.Dropout
        else:
            raise ValueError(
                "dropoutType must be one of SpatialDropout2D or Dropout, passed as a string."
            )

        self.block1 = nn.Sequential(
            nn.Conv2d(1, F1, (1, kernLength), padding=(0, kernLength // 2), bias=False),
            nn.BatchNorm2d(F1),
            Conv2dWithConstraint(F1, F1 * D, (Chans, 1), max_norm=1.0, groups=F1, bias=False),
            nn.BatchNorm2d(F1 * D),
            nn.ELU(),
            nn.AvgPool2d((1, 4)),
            dropoutType(dropoutRate),
        )
        self.block2 = nn.Sequential(
            # SeparableConv2D = depthwise then pointwise
            nn.Conv2d(F1 * D, F1 * D, (1, 16), padding=(0, 8), groups=F1 * D, bias=False),
            nn.Conv2d(F1 * D, F2, 1, bias=False),
            nn.BatchNorm2d(F2),
            nn.ELU(),
            nn.AvgPool2d((1, 8)),
            dropoutType(dropoutRate),
        )
        self.flatten = nn.Flatten()
        with torch.no_grad():
            n_out = self.block2(self.block1(torch.zeros(1, 1, Chans, Samples))).numel()
        self.dense = LinearWithConstraint(n_out, nb_classes, max_norm=norm_rate)

    def forward(self, x):
        if x.dim() == 3:
            x = x.unsqueeze(1)  # (batch, chans, samples) -> (batch, 1, chans, samples)
        x = self.block1(x)
        x = self.block2(x)
        x = self.flatten(x)
        return self.dense(x)


@heldout(
    "eegnet",
    lambda: ((rand(2, 22, 128),), {}),
)
def build_eegnet():
    return EEGNet(nb_classes=4, Chans=22, Samples=128, kernLength=32)


# --------------------------------------------------------------------------------------------
# Shallow ConvNet (Schirrmeister et al., 2017): squaring nonlinearity, mean pooling, log
# --------------------------------------------------------------------------------------------


def square(x):
    return x * x


def safe_log(x, eps=1e-6):
    """Prevents log(0) by clamping first"""
    return torch.log(torch.clamp(x, min=eps))


def transpose_time_to_spat(x):
    return x.permute(0, 3, 2, 1)


def squeeze_final_output(x):
    assert x.size()[3] == 1
    x = x[:, :, :, 0]
    if x.size()[2] == 1:
        x = x[:, :, 0]
    return x


class Expression(nn.Module):
    """Compute given expression on forward pass.

    Parameters
    ----------
    expression_fn : callable
        Should accept variable number of objects of type
        `torch.autograd.Variable` to compute its output.
    """

    def __init__(self, expression_fn):
        super().__init__()
        self.expression_fn = expression_fn

    def forward(self, *x):
        return self.expression_fn(*x)

    def __repr__(self):
        if hasattr(self.expression_fn, "func") and hasattr(self.expression_fn, "kwargs"):
            expression_str = f"{self.expression_fn.func.__name__} {self.expression_fn.kwargs}"
        elif hasattr(self.expression_fn, "__name__"):
            expression_str = self.expression_fn.__name__
        else:
            expression_str = repr(self.expression_fn)
        return self.__class__.__name__ + "(expression=%s) " % expression_str  # noqa: UP031


class Ensure4d(nn.Module):
    def forward(self, x):
        while len(x.shape) < 4:
            x = x.unsqueeze(-1)
        return x


class ShallowFBCSPNet(nn.Sequential):
    def __init__(
        self,
        in_chans,
        n_classes,
        input_window_samples=None,
        n_filters_time=40,
        filter_time_length=25,
        n_filters_spat=40,
        pool_time_length=75,
        pool_time_stride=15,
        final_conv_length=30,
        conv_nonlin=square,
        pool_mode="mean",
        pool_nonlin=safe_log,
        split_first_layer=True,
        batch_norm=True,
        batch_norm_alpha=0.1,
        drop_prob=0.5,
    ):
        super().__init__()
        if final_conv_length == "auto":
            assert input_window_samples is not None
        self.in_chans = in_chans
        self.n_classes = n_classes
        self.input_window_samples = input_window_samples
        self.final_conv_length = final_conv_length

        self.add_module("ensuredims", Ensure4d())
        pool_class = dict(max=nn.MaxPool2d, mean=nn.AvgPool2d)[pool_mode]
        if split_first_layer:
            self.add_module("dimshuffle", Expression(transpose_time_to_spat))
            self.add_module(
                "conv_time",
                nn.Conv2d(1, n_filters_time, (filter_time_length, 1), stride=1),
            )
            self.add_module(
                "conv_spat",
                nn.Conv2d(
                    n_filters_time,
                    n_filters_spat,
                    (1, in_chans),
                    stride=1,
                    bias=not batch_norm,
                ),
            )
            n_filters_conv = n_filters_spat
        else:
            self.add_module(
                "conv_time",
                nn.Conv2d(
                    in_chans,
                    n_filters_time,
                    (filter_time_length, 1),
                    stride=1,
                    bias=not batch_norm,
                ),
            )
            n_filters_conv = n_filters_time
        if batch_norm:
            self.add_module(
                "bnorm", nn.BatchNorm2d(n_filters_conv, momentum=batch_norm_alpha, affine=True)
            )
        self.add_module("conv_nonlin_exp", Expression(conv_nonlin))
        self.add_module(
            "pool",
            pool_class(kernel_size=(pool_time_length, 1), stride=(pool_time_stride, 1)),
        )
        self.add_module("pool_nonlin_exp", Expression(pool_nonlin))
        self.add_module("drop", nn.Dropout(p=drop_prob))
        self.eval()
        if self.final_conv_length == "auto":
            with torch.no_grad():
                out = self(
                    torch.ones((1, self.in_chans, self.input_window_samples), dtype=torch.float32)
                )
            n_out_time = out.shape[2]
            self.final_conv_length = n_out_time
        self.add_module(
            "conv_classifier",
            nn.Conv2d(n_filters_conv, self.n_classes, (self.final_conv_length, 1), bias=True),
        )
        self.add_module("softmax", nn.LogSoftmax(dim=1))
        self.add_module("squeeze", Expression(squeeze_final_output))

        # Initialization, xavier is same as in paper...
        nn.init.xavier_uniform_(self.conv_time.weight, gain=1)
        if not batch_norm:
            nn.init.constant_(self.conv_time.bias, 0)
        if split_first_layer:
            nn.init.xavier_uniform_(self.conv_spat.weight, gain=1)
            if not batch_norm:
                nn.init.constant_(self.conv_spat.bias, 0)
        if batch_norm:
            nn.init.constant_(self.bnorm.weight, 1)
            nn.init.constant_(self.bnorm.bias, 0)
        nn.init.xavier_uniform_(self.conv_classifier.weight, gain=1)
        nn.init.constant_(self.conv_classifier.bias, 0)


@heldout("shallow_fbcsp_net", lambda: ((rand(2, 22, 250, seed=1),), {}))
def build_shallow_convnet():
    return ShallowFBCSPNet(
        22,
        4,
        input_window_samples=250,
        n_filters_time=16,
        n_filters_spat=16,
        final_conv_length="auto",
    )


# --------------------------------------------------------------------------------------------
# 1-D ResNet for the 12-lead ECG (pre-activation, max-pool skips; after Ribeiro et al., 2020)
# --------------------------------------------------------------------------------------------


def _padding(downsample, kernel_size):
    """Compute required padding"""
    padding = max(0, int(math.floor((kernel_size - downsample + 1) / 2)))
    return padding


def _downsample(n_samples_in, n_samples_out):
    """Compute downsample rate"""
    downsample = int(n_samples_in // n_samples_out)
    if downsample < 1:
        raise ValueError("Number of samples should always decrease")
    if n_samples_in % n_samples_out != 0:
        raise ValueError(
            "Number of samples for two consecutive blocks should always decrease by an integer factor."
        )
    return downsample


class ResBlock1d(nn.Module):
    """Residual network unit for unidimensional signals."""

    def __init__(self, n_filters_in, n_filters_out, downsample, kernel_size, dropout_rate):
        if kernel_size % 2 == 0:
            raise ValueError(
                "The current implementation only support odd values for `kernel_size`."
            )
        super().__init__()
        # Forward path
        padding = _padding(1, kernel_size)
        self.conv1 = nn.Conv1d(
            n_filters_in, n_filters_out, kernel_size, padding=padding, bias=False
        )
        self.bn1 = nn.BatchNorm1d(n_filters_out)
        self.relu = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout_rate)
        padding = _padding(downsample, kernel_size)
        self.conv2 = nn.Conv1d(
            n_filters_out,
            n_filters_out,
            kernel_size,
            stride=downsample,
            padding=padding,
            bias=False,
        )
        self.bn2 = nn.BatchNorm1d(n_filters_out)
        self.dropout2 = nn.Dropout(dropout_rate)

        # Skip connection
        skip_connection_layers = []
        # Deal with downsampling
        if downsample > 1:
            maxpool = nn.MaxPool1d(downsample, stride=downsample)
            skip_connection_layers += [maxpool]
        # Deal with n_filters dimension increase
        if n_filters_in != n_filters_out:
            conv1x1 = nn.Conv1d(n_filters_in, n_filters_out, 1, bias=False)
            skip_connection_layers += [conv1x1]
        # Build skip conection layer
        if skip_connection_layers:
            self.skip_connection = nn.Sequential(*skip_connection_layers)
        else:
            self.skip_connection = None

    def forward(self, x, y):
        """Residual unit."""
        if self.skip_connection is not None:
            y = self.skip_connection(y)
        else:
            y = y
        # 1st layer
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.dropout1(x)

        # 2nd layer
        x = self.conv2(x)
        x += y  # Sum skip connection and main connection
        y = x
        x = self.bn2(x)
        x = self.relu(x)
        x = self.dropout2(x)
        return x, y


class ResNet1d(nn.Module):
    """Residual network for unidimensional signals.

    input_dim: (n_filters, n_samples) of the input; blocks_dim: a list of (n_filters, n_samples)
    per residual block (n_samples must go down by integer factors).
    """

    def __init__(self, input_dim, blocks_dim, n_classes, kernel_size=17, dropout_rate=0.8):
        super().__init__()
        # First layers
        n_filters_in, n_filters_out = input_dim[0], blocks_dim[0][0]
        n_samples_in, n_samples_out = input_dim[1], blocks_dim[0][1]
        downsample = _downsample(n_samples_in, n_samples_out)
        padding = _padding(downsample, kernel_size)
        self.conv1 = nn.Conv1d(
            n_filters_in, n_filters_out, kernel_size, bias=False, stride=downsample, padding=padding
        )
        self.bn1 = nn.BatchNorm1d(n_filters_out)

        # Residual block layers
        self.res_blocks = []
        for i, (n_filters, n_samples) in enumerate(blocks_dim):
            n_filters_in, n_filters_out = n_filters_out, n_filters
            n_samples_in, n_samples_out = n_samples_out, n_samples
            downsample = _downsample(n_samples_in, n_samples_out)
            resblk1d = ResBlock1d(
                n_filters_in, n_filters_out, downsample, kernel_size, dropout_rate
            )
            self.add_module(f"resblock1d_{i}", resblk1d)
            self.res_blocks += [resblk1d]

        # Linear layer
        n_filters_last, n_samples_last = blocks_dim[-1]
        last_layer_dim = n_filters_last * n_samples_last
        self.lin = nn.Linear(last_layer_dim, n_classes)
        self.n_blk = len(blocks_dim)

    def forward(self, x):
        """Implement ResNet1d forward propagation"""
        # First layers
        x = self.conv1(x)
        x = self.bn1(x)

        # Residual blocks
        y = x
        for blk in self.res_blocks:
            x, y = blk(x, y)

        # Flatten array
        x = x.view(x.size(0), -1)

        # Fully conected layer
        x = self.lin(x)
        return x


@heldout(
    "ecg_resnet1d",
    lambda: ((rand(2, 12, 1024, seed=2),), {}),
)
def build_ecg_resnet():
    return ResNet1d(
        input_dim=(12, 1024),
        blocks_dim=[(16, 256), (24, 64), (32, 16), (48, 4)],
        n_classes=6,
        kernel_size=17,
        dropout_rate=0.8,
    )
