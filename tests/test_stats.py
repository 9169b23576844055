"""tx.stats: exact figures in float64, chunked reads, NaN/Inf counts, skipped tensors."""

from __future__ import annotations

import doctest
import importlib
import math
import warnings

import pytest
import torch
import torch.nn as nn
from fixtures.real import build

import torchxray as tx
from torchxray.stats import HIST_BINS, tensor_stats


def _reference(t: torch.Tensor) -> dict[str, float]:
    x = t.detach().double().reshape(-1)
    x = x[torch.isfinite(x)]
    return {
        "norm": float(x.norm()),
        "mean": float(x.mean()),
        "std": float(x.std()),
        "min": float(x.min()),
        "max": float(x.max()),
    }


def _close(s: tx.ParamStats, ref: dict[str, float]) -> None:
    for key, value in ref.items():
        assert getattr(s, key) == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_docstring_example_runs() -> None:
    assert doctest.testmod(importlib.import_module("torchxray.stats")).failed == 0


@pytest.mark.parametrize("name", ["timm-resnet18", "hf-llama"])
def test_every_parameter_and_buffer_of_a_real_model(name: str) -> None:
    model, _, _ = build(name)
    got = tx.stats(model)
    expected = dict(model.named_parameters()) | dict(model.named_buffers())
    assert set(got) == set(expected)  # tied weights (Llama's head) once, under the first name
    for key, t in expected.items():
        s = got[key]
        assert s.shape == tuple(t.shape) and s.numel == t.numel() and s.skipped is None
        if t.is_floating_point() and t.numel() > 1:
            _close(s, _reference(t))
            assert sum(s.hist) == t.numel() - s.nonfinite and len(s.hist) == HIST_BINS
        assert s.zeros == int((t == 0).sum())


def test_chunks_give_the_same_figures_as_one_pass() -> None:
    torch.manual_seed(0)
    t = torch.randn(37, 53) * 3 + 1
    t[5, 7] = float("nan")
    t[9, 1] = float("inf")
    t[0, :4] = 0
    whole = tensor_stats(t)
    for chunk in (1, 7, 53, 100):
        part = tensor_stats(t, chunk=chunk)
        assert part.hist == whole.hist and part.zeros == whole.zeros == 4
        assert part.nonfinite == whole.nonfinite == 2
        for key in ("norm", "mean", "std", "min", "max"):
            assert getattr(part, key) == pytest.approx(getattr(whole, key), rel=1e-12)
    _close(whole, _reference(t))
    x = t.double()[torch.isfinite(t)]
    reference = torch.histc(x, HIST_BINS, float(x.min()), float(x.max())).long().tolist()
    assert list(whole.hist) == reference  # torch's own binning
    # A non-contiguous view is read slice by slice, same figures.
    assert tensor_stats(t.t(), chunk=11).hist == whole.hist
    assert tensor_stats(t.t(), chunk=11).std == pytest.approx(whole.std, rel=1e-12)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_is_exact(dtype: torch.dtype) -> None:
    # 4096 values of 1000 + small noise: a float16 sum overflows its range and a running half
    # precision sum loses every digit of the noise; float64 keeps both.
    torch.manual_seed(0)
    t = (1000 + torch.randn(4096)).to(dtype)
    s = tensor_stats(t, chunk=100)
    _close(s, _reference(t))
    assert math.isinf(float(t.sum(dtype=dtype))) or dtype == torch.bfloat16


def test_quantized_tensors_are_dequantized_per_chunk() -> None:
    torch.manual_seed(0)
    w = torch.randn(8, 16)
    scales, zeros = torch.rand(8) / 10 + 0.01, torch.zeros(8).long()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch deprecates creating quantized tensors
        q = torch.quantize_per_channel(w, scales, zeros, 0, torch.qint8)
    s = tensor_stats(q, chunk=16)
    _close(s, _reference(q.dequantize()))
    assert s.dtype == "qint8"
    layer = torch.ao.nn.quantized.Linear(16, 8)
    layer.set_weight_bias(q, torch.zeros(8))
    # Packed in a C++ object, read through the layer's _weight_bias(), named as the tree counts it.
    got = tx.stats(nn.Sequential(layer))
    weight = got["0._packed_params._packed_params.weight"]
    assert weight.mean == pytest.approx(float(q.dequantize().double().mean()), rel=1e-12)
    assert got["0._packed_params._packed_params.bias"].zeros == 8


def test_meta_fake_and_lazy_tensors_are_skipped_with_a_reason() -> None:
    with torch.device("meta"):
        meta = nn.Linear(4, 2)
    got = tx.stats(meta)
    assert got["weight"].skipped == "meta tensor: no values" and got["weight"].norm is None
    assert got["weight"].shape == (2, 4)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.randn(3, 3)
    assert tensor_stats(fake).skipped == "fake tensor: no values"
    lazy = tx.stats(nn.LazyLinear(3))
    assert "lazy" in (lazy["weight"].skipped or "")


def test_a_tensor_whose_values_cannot_be_read_is_skipped_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stats_mod = importlib.import_module("torchxray.stats")
    real = stats_mod.float64_chunks

    def broken(t: torch.Tensor, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if t.dim() == 1:
            raise RuntimeError("no storage here")
        return real(t, *args, **kwargs)

    monkeypatch.setattr(stats_mod, "float64_chunks", broken)
    got = tx.stats(nn.Linear(4, 2))
    assert got["bias"].skipped == "values could not be read: no storage here"
    assert got["weight"].skipped is None and got["weight"].norm is not None


def test_edge_values() -> None:
    assert tensor_stats(torch.empty(0)).norm is None
    nan = tensor_stats(torch.full((3,), float("nan")))
    assert (nan.nonfinite, nan.mean, nan.hist) == (3, None, ())
    const = tensor_stats(torch.full((5,), 2.0))
    assert (const.std, const.min, const.max, const.hist[0]) == (0.0, 2.0, 2.0, 5)
    one = tensor_stats(torch.tensor(3.0))
    assert (one.numel, one.std, one.norm) == (1, 0.0, 3.0)
    ints = tensor_stats(torch.arange(5))
    assert (ints.mean, ints.zeros, ints.max) == (2.0, 1, 4.0)
    with pytest.raises(TypeError, match=r"stats\(\) needs an nn.Module"):
        tx.stats(torch.zeros(2))  # type: ignore[arg-type]
