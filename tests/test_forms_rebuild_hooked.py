"""The legacy hook-based ``torch.nn.utils.weight_norm`` / ``spectral_norm`` (``_forms/rebuild/
hooked.py``): a layer wrapped after it was made has a plain layer's form (its wrapped tensor is
one tensor of its logical shape), and an edit, which rebuilds it, wraps it again with the same
name and dim and keeps its weights."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn.utils import spectral_norm, weight_norm

import torchxray as tx
from torchxray._forms.rebuild.hooked import NormHook, norm_hooks
from torchxray._forms.rebuild.parts import parts

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")


def _model() -> nn.Sequential:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nn.Sequential(
            weight_norm(nn.Conv1d(2, 4, 3, padding=1)),
            nn.ReLU(),
            weight_norm(nn.ConvTranspose1d(4, 4, 4, stride=2, padding=1), dim=1),
            spectral_norm(nn.Conv1d(4, 3, 1), n_power_iterations=2),
        )


def test_the_wrappings_are_read_off_the_hooks_and_the_logical_tensor_is_shown() -> None:
    m = _model()
    assert norm_hooks(m[0]) == [NormHook(False, "weight", 0)]
    assert norm_hooks(m[2]) == [NormHook(False, "weight", 1)]
    assert norm_hooks(m[3]) == [NormHook(True, "weight", 0, 2, 1e-12)]
    got = parts(m[0]).items
    assert got["", "param weight"] == "(4, 2, 3) float32"
    assert ("", "param weight_g") not in got and ("", "attr weight") not in got
    shown = parts(m[3], kinds=True).items["", "param weight"]
    assert shown.endswith("wrapped by SpectralNorm(dim=0, n_power_iterations=2, eps=1e-12)")
    assert ("", "buffer weight_u") not in parts(m[3]).items


@pytest.mark.parametrize("path", ["0", "2", "3"])
def test_a_wrapped_torch_layer_gets_an_exact_form(path: str) -> None:
    assert tx.form(_model().get_submodule(path)).inexact == ""


def test_an_edit_wraps_the_rebuilt_layer_again_and_keeps_its_weights() -> None:
    m = _model()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    log = tx.PatchLog(m)
    # Edits that keep every weight's shape: the layers are rebuilt from their forms.
    log.edit("0", padding_mode="reflect")
    log.edit("2", output_padding=1)
    log.edit("3", dilation=2)
    assert norm_hooks(m[0]) == [NormHook(False, "weight", 0)]
    assert norm_hooks(m[2]) == [NormHook(False, "weight", 1)]
    assert norm_hooks(m[3]) == [NormHook(True, "weight", 0, 2, 1e-12)]
    after = m.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)
    assert m(torch.randn(2, 2, 8)).shape == (2, 3, 17)
    log.edit("0", out_channels=6)  # a width the weights do not fit: wrapped again, fresh
    assert norm_hooks(m[0]) == [NormHook(False, "weight", 0)] and m[0].weight_v.shape[0] == 6


class Chooser(nn.Module):
    def __init__(self, spectral=False):  # type: ignore[no-untyped-def]
        super().__init__()
        wrap = spectral_norm if spectral else weight_norm
        self.conv = wrap(nn.Conv1d(2, 4, 3))


def test_a_constructor_that_chooses_the_wrapping_shows_its_choice() -> None:
    # Named below the form's own module: weight_norm and spectral_norm are not one rebuild.
    assert "wrapped by WeightNorm" in parts(Chooser()).items["conv", "param weight"]
    f = tx.form(Chooser(spectral=True))
    assert f.inexact == "" and f["spectral"].value is True
