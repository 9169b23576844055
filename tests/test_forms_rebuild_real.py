"""A constructor that computes with tensor values (``_forms/rebuild/real.py``): built for real on the
CPU where the meta build cannot read a value and the live module is small, by the search and
the gate alike; refused in a sentence where it is not small; the user's random generator kept."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._forms.rebuild.parts import parts
from torchxray._forms.rebuild.real import REAL_ELEMENTS, Rebuild, data_dependent, small

warnings.filterwarnings("ignore")
pytestmark = pytest.mark.usefixtures("roomy_form_budget")


class Fourier(nn.Module):
    """Random Fourier features whose top frequency is read off a linspace (``.item()``)."""

    def __init__(self, in_features: int, mapping_size: int = 64, max_res: int = 32) -> None:
        super().__init__()
        self.register_buffer("B", torch.randn(in_features, mapping_size))
        freqs = torch.linspace(1.0, max_res / 2, steps=mapping_size)
        self.max_freq = freqs[-1].item()
        self.proj = nn.Linear(2 * mapping_size, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = 2 * math.pi * x @ self.B / self.max_freq
        return self.proj(torch.cat([p.sin(), p.cos()], -1))


def test_a_small_tensor_computing_constructor_is_rebuilt_for_real_and_exact() -> None:
    from tests.handwritten.classifiers import ConvNeXt

    for m in (Fourier(3, 16), ConvNeXt(depths=[1, 1, 2], dims=[8, 16, 32], drop_path_rate=0.1)):
        before = torch.random.get_rng_state()
        f = tx.form(m)
        assert f.inexact == "", f.inexact
        assert torch.equal(torch.random.get_rng_state(), before)  # the generator as found
        assert parts(f.build()).items == parts(m).items
    assert tx.form(Fourier(3, 16))["mapping_size"].value == 16


def test_a_large_one_is_refused_in_a_sentence_that_names_the_meta_build() -> None:
    big = Fourier(64, 4096)  # 2 * 4096 * 64 * 2 elements: past REAL_ELEMENTS
    assert not small(big)
    why = tx.form(big).inexact
    assert "cannot be called on meta tensors" in why


def test_only_a_build_that_reads_values_is_made_again_on_the_cpu() -> None:
    build = Rebuild(real_ok=True)
    made = build.run(lambda: Fourier(2, 4))
    assert build.real and made.B.device.type == "cpu" and made.B.numel() <= REAL_ELEMENTS
    plain = Rebuild(real_ok=True)
    assert plain.run(lambda: nn.Linear(2, 3)).weight.is_meta and not plain.real
    with pytest.raises(RuntimeError, match="meta tensors"):
        Rebuild(real_ok=False).run(lambda: Fourier(2, 4))
    assert data_dependent(NotImplementedError("Cannot copy out of meta tensor; no data!"))
    assert not data_dependent(TypeError("'int' object is not iterable"))


class Whitening(nn.Conv1d):
    """A fixed 1x1 convolution whose weights its constructor sets from statistics it is given, as
    CPU tensors made with the legacy ``torch.Tensor`` (mixed with the layer's own on meta)."""

    def __init__(self, scale, means=(0.1, 0.2), stds=(1.0, 2.0), direction=1):  # type: ignore[no-untyped-def]
        super().__init__(2, 2, kernel_size=1)
        std = torch.Tensor(stds)
        self.weight.data = torch.eye(2).view(2, 2, 1) / std.view(2, 1, 1)
        self.bias.data = direction * scale * torch.Tensor(means) / std
        self.requires_grad_(False)


def test_a_constructor_mixing_its_own_cpu_tensors_with_the_layers_is_built_for_real() -> None:
    with pytest.raises(RuntimeError):
        Rebuild(real_ok=False).run(lambda: Whitening(4.0))
    build = Rebuild(real_ok=True)
    assert build.run(lambda: Whitening(4.0)).bias.device.type == "cpu" and build.real
    f = tx.form(Whitening(7, direction=-1))
    assert f.inexact == "", f.inexact
    # The gate sees shapes, not values: ``scale`` sets values alone, so one number above rebuilds
    # as exactly, and the value shown is a guess (origin "default"), never proven.
    assert f["scale"].origin == "default"


class Clamped(nn.Module):
    """A size read through a step (``int(log2(side))``): other values rebuild alike, so it is
    no proven value. (A width clamped by another, ``max(dim, hidden)``, and handed to a layer
    is not tried one off: a width handed on is shown by the layer.)"""

    def __init__(self, dim: int, hidden: int = 128, side: int = 64, rate: float = 0.0) -> None:
        super().__init__()
        hidden = max(dim, hidden)
        self.fc = nn.Sequential(nn.Linear(dim, hidden), nn.Linear(hidden, dim))
        self.ups = nn.ModuleList(
            nn.Upsample(scale_factor=2) for _ in range(int(math.log2(side)) - 2)
        )
        rates = [x.item() for x in torch.linspace(0, rate, 3)]
        self.drops = nn.ModuleList(nn.Dropout(r) for r in rates)


def test_a_number_that_rebuilds_alike_one_off_is_flagged_and_a_float32_read_is_spelled_short() -> (
    None
):
    f = tx.form(Clamped(16, hidden=8, side=24, rate=0.1))
    assert f.inexact == "", f.inexact
    assert f["side"].origin == "default" and f["side"].note.startswith("a guess")
    assert f["dim"].value == 16 and f["dim"].origin != "default"  # a width: proven
    # The last dropout's rate is float32's 0.10000000149011612: shown as it was typed.
    assert f["rate"].value == 0.1
