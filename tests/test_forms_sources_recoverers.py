"""Every public torch.nn module class round-trips through its form: ``form(m).build()`` has the
same type, ``extra_repr`` and parameter/buffer names and shapes as ``m``.

The class list is enumerated from ``torch.nn`` itself, so a class without an entry in EXAMPLES
fails instead of being skipped.
"""

from __future__ import annotations

import ast
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from torchxray.forms import form

# Classes that cannot be built standalone as a layer.
EXCLUDED: dict[str, str] = {}

_lin = lambda: nn.Linear(2, 3)  # noqa: E731

# pyproject allows torch>=2.4; the examples below are written for the newest torch, and these are
# what older releases lack. A class here may be missing from torch.nn; a keyword here is only
# passed where the class accepts it (BatchNorm and GroupNorm gained `bias` after torch 2.11).
LATER_CLASSES = {"LinearCrossEntropyLoss"}


def _takes(cls: type, name: str) -> bool:
    return name in inspect.signature(cls).parameters


def _no_bias(cls: type, *args: Any, **kwargs: Any) -> nn.Module:
    """`cls(*args, bias=False, **kwargs)` where the class has a `bias` keyword, else `affine` off
    (the older way to drop the norm's parameters)."""
    if _takes(cls, "bias"):
        return cls(*args, bias=False, **kwargs)
    return cls(*args, affine=False, **kwargs)


def _enc_layer() -> nn.TransformerEncoderLayer:
    return nn.TransformerEncoderLayer(
        16, 4, 32, 0.2, activation="gelu", batch_first=True, norm_first=True
    )


def _dec_layer() -> nn.TransformerDecoderLayer:
    return nn.TransformerDecoderLayer(16, 2, 24, 0.0, layer_norm_eps=1e-6, bias=False)


# name -> list of factories; several where derived values have distinct branches.
EXAMPLES: dict[str, list[Callable[[], nn.Module]]] = {
    "AdaptiveAvgPool1d": [lambda: nn.AdaptiveAvgPool1d(5)],
    "AdaptiveAvgPool2d": [lambda: nn.AdaptiveAvgPool2d((5, None))],
    "AdaptiveAvgPool3d": [lambda: nn.AdaptiveAvgPool3d((2, 3, 4))],
    "AdaptiveLogSoftmaxWithLoss": [
        lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 10], div_value=2.0, head_bias=True)
    ],
    "AdaptiveMaxPool1d": [lambda: nn.AdaptiveMaxPool1d(3, return_indices=True)],
    "AdaptiveMaxPool2d": [lambda: nn.AdaptiveMaxPool2d((3, 4))],
    "AdaptiveMaxPool3d": [lambda: nn.AdaptiveMaxPool3d(2)],
    "AlphaDropout": [lambda: nn.AlphaDropout(0.3, inplace=True)],
    "AvgPool1d": [lambda: nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False)],
    "AvgPool2d": [lambda: nn.AvgPool2d((3, 2), stride=(2, 1), padding=1, divisor_override=3)],
    "AvgPool3d": [lambda: nn.AvgPool3d(2)],
    "BCELoss": [lambda: nn.BCELoss(weight=torch.ones(3), reduction="sum")],
    "BCEWithLogitsLoss": [lambda: nn.BCEWithLogitsLoss(pos_weight=torch.ones(4))],
    "BatchNorm1d": [lambda: nn.BatchNorm1d(4, eps=1e-3, momentum=None, affine=False)],
    "BatchNorm2d": [
        lambda: _no_bias(nn.BatchNorm2d, 8, momentum=0.3),
        lambda: nn.BatchNorm2d(8, dtype=torch.float64),
    ],
    "BatchNorm3d": [lambda: nn.BatchNorm3d(3, track_running_stats=False)],
    "Bilinear": [lambda: nn.Bilinear(2, 3, 4, bias=False)],
    "CELU": [lambda: nn.CELU(0.5)],
    "CTCLoss": [lambda: nn.CTCLoss(blank=2, reduction="sum", zero_infinity=True)],
    "ChannelShuffle": [lambda: nn.ChannelShuffle(4)],
    "CircularPad1d": [lambda: nn.CircularPad1d((1, 2))],
    "CircularPad2d": [lambda: nn.CircularPad2d(2)],
    "CircularPad3d": [lambda: nn.CircularPad3d((1, 2, 0, 1, 1, 0))],
    "ConstantPad1d": [lambda: nn.ConstantPad1d(2, 3.5)],
    "ConstantPad2d": [lambda: nn.ConstantPad2d((1, 0, -1, 2), -1.0)],
    "ConstantPad3d": [lambda: nn.ConstantPad3d(1, 0.0)],
    "Container": [lambda: nn.Container(a=_lin(), b=nn.ReLU())],
    "Conv1d": [lambda: nn.Conv1d(3, 6, 5, padding="same", dilation=2, groups=3)],
    "Conv2d": [
        lambda: nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False, padding_mode="reflect"),
        lambda: nn.Conv2d(4, 4, (3, 1), padding="valid", groups=2, dtype=torch.float64),
    ],
    "Conv3d": [
        lambda: nn.Conv3d(2, 4, (1, 3, 3), stride=(1, 2, 2), padding_mode="circular", padding=1)
    ],
    "ConvTranspose1d": [lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1)],
    "ConvTranspose2d": [lambda: nn.ConvTranspose2d(4, 6, 4, 2, 1, groups=2, bias=False)],
    "ConvTranspose3d": [lambda: nn.ConvTranspose3d(2, 2, 3, dilation=2)],
    "CosineEmbeddingLoss": [lambda: nn.CosineEmbeddingLoss(margin=0.2)],
    "CosineSimilarity": [lambda: nn.CosineSimilarity(dim=2, eps=1e-6)],
    "CrossEntropyLoss": [
        lambda: nn.CrossEntropyLoss(torch.rand(5), ignore_index=3, label_smoothing=0.1)
    ],
    "CrossMapLRN2d": [lambda: nn.CrossMapLRN2d(3, 1e-3, 0.5, 2.0)],
    "DataParallel": [lambda: nn.DataParallel(_lin())],
    "Dropout": [lambda: nn.Dropout(0.25)],
    "Dropout1d": [lambda: nn.Dropout1d(0.1, True)],
    "Dropout2d": [lambda: nn.Dropout2d(0.7)],
    "Dropout3d": [lambda: nn.Dropout3d()],
    "ELU": [lambda: nn.ELU(2.0, inplace=True)],
    "Embedding": [
        lambda: nn.Embedding(10, 4, padding_idx=-1, max_norm=1.0, norm_type=1.0, sparse=True),
        lambda: nn.Embedding(5, 3, _freeze=True),
    ],
    "EmbeddingBag": [
        lambda: nn.EmbeddingBag(10, 4, mode="max", include_last_offset=True, padding_idx=2)
    ],
    "FeatureAlphaDropout": [lambda: nn.FeatureAlphaDropout(0.2)],
    "Flatten": [lambda: nn.Flatten(0, 2)],
    "Fold": [lambda: nn.Fold((4, 5), (2, 2), dilation=1, padding=1, stride=2)],
    "FractionalMaxPool2d": [lambda: nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))],
    "FractionalMaxPool3d": [lambda: nn.FractionalMaxPool3d(2, output_size=(4, 4, 4))],
    "GELU": [lambda: nn.GELU(approximate="tanh")],
    "GLU": [lambda: nn.GLU(1)],
    "GRU": [lambda: nn.GRU(4, 8, 2, batch_first=True, dropout=0.1, bidirectional=True)],
    "GRUCell": [lambda: nn.GRUCell(3, 5, bias=False)],
    "GaussianNLLLoss": [lambda: nn.GaussianNLLLoss(full=True, eps=1e-3)],
    "GroupNorm": [lambda: nn.GroupNorm(2, 8, affine=False), lambda: _no_bias(nn.GroupNorm, 2, 4)],
    "Hardshrink": [lambda: nn.Hardshrink(0.3)],
    "Hardsigmoid": [lambda: nn.Hardsigmoid(True)],
    "Hardswish": [lambda: nn.Hardswish()],
    "Hardtanh": [lambda: nn.Hardtanh(-2.0, 3.0)],
    "HingeEmbeddingLoss": [lambda: nn.HingeEmbeddingLoss(2.0)],
    "HuberLoss": [lambda: nn.HuberLoss(delta=0.5)],
    "Identity": [lambda: nn.Identity(54, unused="x")],
    "InstanceNorm1d": [lambda: nn.InstanceNorm1d(4, affine=True)],
    "InstanceNorm2d": [lambda: nn.InstanceNorm2d(4, track_running_stats=True, momentum=0.2)],
    "InstanceNorm3d": [lambda: nn.InstanceNorm3d(2)],
    "KLDivLoss": [lambda: nn.KLDivLoss(reduction="batchmean", log_target=True)],
    "L1Loss": [lambda: nn.L1Loss(reduction="none")],
    "LPPool1d": [lambda: nn.LPPool1d(2, 3, stride=2)],
    "LPPool2d": [lambda: nn.LPPool2d(1.5, (2, 3), ceil_mode=True)],
    "LPPool3d": [lambda: nn.LPPool3d(2, 2)],
    "LSTM": [lambda: nn.LSTM(4, 8, num_layers=2, proj_size=3, bias=False)],
    "LSTMCell": [lambda: nn.LSTMCell(3, 5)],
    "LayerNorm": [
        lambda: nn.LayerNorm((4, 5), eps=1e-6, bias=False),
        lambda: nn.LayerNorm(8, elementwise_affine=False),
    ],
    "LazyBatchNorm1d": [lambda: nn.LazyBatchNorm1d(eps=1e-3, affine=False)],
    "LazyBatchNorm2d": [lambda: nn.LazyBatchNorm2d()],
    "LazyBatchNorm3d": [lambda: nn.LazyBatchNorm3d(momentum=0.2)],
    "LazyConv1d": [lambda: nn.LazyConv1d(4, 3, bias=False)],
    "LazyConv2d": [lambda: nn.LazyConv2d(8, 3, stride=2, padding=1)],
    "LazyConv3d": [lambda: nn.LazyConv3d(2, 1)],
    "LazyConvTranspose1d": [lambda: nn.LazyConvTranspose1d(4, 3)],
    "LazyConvTranspose2d": [lambda: nn.LazyConvTranspose2d(4, 2, stride=2)],
    "LazyConvTranspose3d": [lambda: nn.LazyConvTranspose3d(2, 3, bias=False)],
    "LazyInstanceNorm1d": [lambda: nn.LazyInstanceNorm1d()],
    "LazyInstanceNorm2d": [lambda: nn.LazyInstanceNorm2d(affine=False)],
    "LazyInstanceNorm3d": [lambda: nn.LazyInstanceNorm3d(eps=1e-4)],
    "LazyLinear": [lambda: nn.LazyLinear(7, bias=False)],
    "LeakyReLU": [lambda: nn.LeakyReLU(0.2, inplace=True)],
    "Linear": [lambda: nn.Linear(3, 4, bias=False), lambda: nn.Linear(2, 2, dtype=torch.float16)],
    "LinearCrossEntropyLoss": [
        lambda: nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True, ignore_index=1)
    ],
    "LocalResponseNorm": [lambda: nn.LocalResponseNorm(3, 1e-3, 0.5, 2.0)],
    "LogSigmoid": [lambda: nn.LogSigmoid()],
    "LogSoftmax": [lambda: nn.LogSoftmax(dim=1)],
    "MSELoss": [lambda: nn.MSELoss(reduction="sum")],
    "MarginRankingLoss": [lambda: nn.MarginRankingLoss(0.5)],
    "MaxPool1d": [lambda: nn.MaxPool1d(3, 2, 1, dilation=2, return_indices=True)],
    "MaxPool2d": [lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)],
    "MaxPool3d": [lambda: nn.MaxPool3d((1, 2, 2))],
    "MaxUnpool1d": [lambda: nn.MaxUnpool1d(2)],
    "MaxUnpool2d": [lambda: nn.MaxUnpool2d(3, 2, 1)],
    "MaxUnpool3d": [lambda: nn.MaxUnpool3d(2, stride=(1, 2, 2))],
    "Mish": [lambda: nn.Mish(inplace=True)],
    "Module": [lambda: nn.Module()],
    "ModuleDict": [lambda: nn.ModuleDict({"a": _lin(), "b-c": nn.ReLU()}), lambda: nn.ModuleDict()],
    "ModuleList": [lambda: nn.ModuleList([_lin(), nn.ReLU()])],
    "MultiLabelMarginLoss": [lambda: nn.MultiLabelMarginLoss(reduction="none")],
    "MultiLabelSoftMarginLoss": [lambda: nn.MultiLabelSoftMarginLoss(torch.ones(3))],
    "MultiMarginLoss": [lambda: nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.ones(4))],
    "MultiheadAttention": [
        lambda: nn.MultiheadAttention(
            16,
            4,
            dropout=0.1,
            bias=False,
            add_bias_kv=True,
            add_zero_attn=True,
            kdim=8,
            vdim=12,
            batch_first=True,
        ),
        lambda: nn.MultiheadAttention(8, 2),
    ],
    "NLLLoss": [lambda: nn.NLLLoss(ignore_index=0)],
    "NLLLoss2d": [lambda: nn.NLLLoss2d(reduction="sum")],
    "PReLU": [lambda: nn.PReLU(3, 0.1)],
    "PairwiseDistance": [lambda: nn.PairwiseDistance(p=1.0, eps=1e-4, keepdim=True)],
    "ParameterDict": [lambda: nn.ParameterDict({"w": nn.Parameter(torch.ones(2))})],
    "ParameterList": [lambda: nn.ParameterList([nn.Parameter(torch.ones(2, 3))])],
    "PixelShuffle": [lambda: nn.PixelShuffle(3)],
    "PixelUnshuffle": [lambda: nn.PixelUnshuffle(2)],
    "PoissonNLLLoss": [lambda: nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-6)],
    "RMSNorm": [
        lambda: nn.RMSNorm([4, 5], eps=1e-6),
        lambda: nn.RMSNorm(3, elementwise_affine=False),
    ],
    "RNN": [lambda: nn.RNN(3, 6, nonlinearity="relu", bidirectional=True)],
    "RNNBase": [lambda: nn.RNNBase("GRU", 3, 4, num_layers=2)],
    "RNNCell": [lambda: nn.RNNCell(3, 4, nonlinearity="relu")],
    "RNNCellBase": [lambda: nn.RNNCellBase(3, 4, bias=True, num_chunks=2)],
    "RReLU": [lambda: nn.RReLU(0.1, 0.2)],
    "ReLU": [lambda: nn.ReLU(inplace=True)],
    "ReLU6": [lambda: nn.ReLU6()],
    "ReflectionPad1d": [lambda: nn.ReflectionPad1d(2)],
    "ReflectionPad2d": [lambda: nn.ReflectionPad2d((1, 1, 2, 0))],
    "ReflectionPad3d": [lambda: nn.ReflectionPad3d(1)],
    "ReplicationPad1d": [lambda: nn.ReplicationPad1d((3, 1))],
    "ReplicationPad2d": [lambda: nn.ReplicationPad2d(2)],
    "ReplicationPad3d": [lambda: nn.ReplicationPad3d(1)],
    "SELU": [lambda: nn.SELU(True)],
    "Sequential": [
        lambda: nn.Sequential(_lin(), nn.ReLU()),
        lambda: nn.Sequential(OrderedDict(fc=_lin(), act=nn.GELU())),
    ],
    "SiLU": [lambda: nn.SiLU()],
    "Sigmoid": [lambda: nn.Sigmoid()],
    "SmoothL1Loss": [lambda: nn.SmoothL1Loss(beta=0.5)],
    "SoftMarginLoss": [lambda: nn.SoftMarginLoss()],
    "Softmax": [lambda: nn.Softmax(-1)],
    "Softmax2d": [lambda: nn.Softmax2d()],
    "Softmin": [lambda: nn.Softmin(0)],
    "Softplus": [lambda: nn.Softplus(2.0, 10.0)],
    "Softshrink": [lambda: nn.Softshrink(0.1)],
    "Softsign": [lambda: nn.Softsign()],
    "SyncBatchNorm": [lambda: nn.SyncBatchNorm(4, momentum=0.2, affine=False)],
    "Tanh": [lambda: nn.Tanh()],
    "Tanhshrink": [lambda: nn.Tanhshrink()],
    "Threshold": [lambda: nn.Threshold(0.1, 20.0)],
    "Transformer": [
        lambda: nn.Transformer(
            16,
            2,
            2,
            1,
            32,
            0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
            layer_norm_eps=1e-6,
        ),
    ],
    "TransformerDecoder": [lambda: nn.TransformerDecoder(_dec_layer(), 2, norm=nn.LayerNorm(16))],
    "TransformerDecoderLayer": [_dec_layer],
    "TransformerEncoder": [
        lambda: nn.TransformerEncoder(_enc_layer(), 3, enable_nested_tensor=False),
        lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 2, mask_check=False),
    ],
    "TransformerEncoderLayer": [
        _enc_layer,
        lambda: nn.TransformerEncoderLayer(8, 2, activation=F.silu, bias=False),
        lambda: nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()),
    ],
    "TripletMarginLoss": [lambda: nn.TripletMarginLoss(0.5, p=1.0, swap=True)],
    "TripletMarginWithDistanceLoss": [
        lambda: nn.TripletMarginWithDistanceLoss(
            distance_function=nn.PairwiseDistance(), margin=2.0
        )
    ],
    "Unflatten": [lambda: nn.Unflatten(1, (2, 5))],
    "Unfold": [lambda: nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))],
    "Upsample": [
        lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
        lambda: nn.Upsample(size=(4, 6), mode="nearest-exact"),
    ],
    "UpsamplingBilinear2d": [lambda: nn.UpsamplingBilinear2d(scale_factor=3)],
    "UpsamplingNearest2d": [lambda: nn.UpsamplingNearest2d(size=(5, 5))],
    "ZeroPad1d": [lambda: nn.ZeroPad1d((2, 1))],
    "ZeroPad2d": [lambda: nn.ZeroPad2d(1)],
    "ZeroPad3d": [lambda: nn.ZeroPad3d((1, 0, 1, 0, 2, 2))],
}


def nn_module_classes() -> list[str]:
    names = []
    for name in dir(nn):
        obj = getattr(nn, name)
        if isinstance(obj, type) and issubclass(obj, nn.Module) and not name.startswith("_"):
            names.append(name)
    return sorted(names)


ALL = nn_module_classes()
CASES = [
    (name, i) for name in ALL if name not in EXCLUDED for i in range(len(EXAMPLES.get(name, [0])))
]


def _shapes(m: nn.Module) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n, t in [*m.named_parameters(), *m.named_buffers()]:
        if isinstance(t, nn.parameter.UninitializedTensorMixin):
            out[n] = ("uninitialized", type(t).__name__)
        else:
            out[n] = (tuple(t.shape), t.dtype)
    return out


def _quiet(fn: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize(("name", "i"), CASES)
def test_roundtrip(name: str, i: int) -> None:
    assert name in EXAMPLES, f"torch.nn.{name} has no example: add one to EXAMPLES"
    m = _quiet(EXAMPLES[name][i])
    assert type(m).__name__ == name or name.startswith("Lazy")
    f = form(m)
    built = _quiet(f.build)
    assert type(built) is type(m)
    assert built.extra_repr() == m.extra_repr()
    assert repr(built) == repr(m)
    assert _shapes(built) == _shapes(m)
    assert [n for n, _ in built.named_modules()] == [n for n, _ in m.named_modules()]


@pytest.mark.parametrize(("name", "i"), CASES)
def test_text_roundtrip(name: str, i: int) -> None:
    """Every field's text reads back as the field's value (the view sends text)."""
    m = _quiet(EXAMPLES[name][i])
    f = form(m)
    for fld in f.fields:
        if fld.kind in ("literal", "varargs", "varkw", "tensor") and not _literal_ok(fld.text):
            continue  # modules, large tensors: the text is a label, kept when unchanged
        if isinstance(fld.value, nn.Module):
            continue  # a module instance passed as a callable (activation=nn.GELU())
        got = f.parse_text(fld.name, fld.text)
        if isinstance(fld.value, torch.Tensor):
            assert torch.equal(got, fld.value.cpu())
        else:
            assert got == fld.value or got is fld.value, (fld.name, fld.text, got)


def _literal_ok(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    return True


def test_every_class_listed() -> None:
    missing = [n for n in ALL if n not in EXAMPLES and n not in EXCLUDED]
    assert not missing, f"no round-trip example for {missing}"
    stale = [n for n in EXAMPLES if n not in ALL and n not in LATER_CLASSES]
    assert not stale


def test_coverage_report(capsys: pytest.CaptureFixture[str]) -> None:
    ok = []
    for name in ALL:
        if name in EXCLUDED:
            continue
        try:
            m = _quiet(EXAMPLES[name][0])
            b = _quiet(form(m).build)
            if type(b) is type(m) and b.extra_repr() == m.extra_repr():
                ok.append(name)
        except Exception:  # noqa: BLE001, S112 - counted as a failure below
            continue
    with capsys.disabled():
        print(
            f"\nforms round-trip: {len(ok)} of {len(ALL)} torch.nn classes "
            f"({len(EXCLUDED)} excluded)"
        )
    assert len(ok) == len(ALL) - len(EXCLUDED)


def test_tuple_lengths_of_1d_2d_3d_classes_match_what_torch_stores() -> None:
    """For every example whose class ends in 1d/2d/3d, each tuple it stores (kernel_size, stride,
    padding, output_size, ...) passes the length check as it is and fails with one more element:
    the rule (one int per dimension, two for a padding layer's padding) is torch's own."""
    from torchxray._forms.validate import check_range

    checked = 0
    for name in ALL:
        if name[-2:] not in ("1d", "2d", "3d"):
            continue
        for make in EXAMPLES[name]:
            f = form(_quiet(make))
            for fld in f.fields:
                if fld.kind != "int_or_tuple" or not isinstance(fld.value, tuple):
                    continue
                assert check_range(f.cls, fld, fld.value) is None, (name, fld.name, fld.value)
                longer = (*fld.value, 1)
                msg = check_range(f.cls, fld, longer)
                assert msg is not None and f"got {len(longer)}" in msg, (name, fld.name)
                checked += 1
    assert checked >= 60, checked  # conv, pool, pad, adaptive pool classes, several fields each
