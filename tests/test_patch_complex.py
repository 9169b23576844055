"""Complex weights (a Fourier layer's ``cfloat`` ones) survive an edit and a replayed patch:
``nn.Module.to(dtype=torch.float32)`` would cast them to real ones, dropping their imaginary
parts, so torchxray casts only floating tensors (``src/torchxray/_cast.py``)."""

from __future__ import annotations

import warnings

import torch
from torch import nn

from torchxray.patch import PatchLog
from torchxray.replay import place

warnings.filterwarnings("ignore")


class _Spectral(nn.Module):
    def __init__(self, width: int, modes: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(width, width, modes, dtype=torch.cfloat) / width)


class _Block(nn.Module):
    """A real pointwise conv beside complex spectral weights, as a Fourier neural operator's."""

    def __init__(self, width: int = 8, modes: int = 4) -> None:
        super().__init__()
        self.pw = nn.Conv1d(width, width, 1)
        self.spectral = _Spectral(width, modes)


def test_an_edit_keeps_complex_weights_complex() -> None:
    net = nn.Sequential(nn.Linear(2, 8), _Block())
    log = PatchLog(net)
    log.edit("1", modes=3)
    assert net[1].spectral.w.dtype == torch.complex64
    assert net[1].spectral.w.shape == (8, 8, 3) and net[1].pw.weight.dtype == torch.float32
    log.undo()
    assert net[1].spectral.w.shape == (8, 8, 4)


def test_a_double_model_casts_the_floats_of_a_replacement_and_keeps_its_complex_ones() -> None:
    net = nn.Sequential(nn.Linear(2, 8), _Block()).double()
    assert net[1].spectral.w.dtype == torch.complex64  # torch's own .double() leaves it as it is
    new = place(_Block(modes=3), net, "1")
    assert new.pw.weight.dtype == torch.float64
    assert new.spectral.w.dtype == torch.complex64 and torch.is_complex(new.spectral.w)
