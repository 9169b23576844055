"""A number a tensor is filled with (``_forms/sources/fills.py``), read back where all its values
are still one; the rebuild cannot compare values, so the form shows it as a guess."""

from __future__ import annotations

import argparse

import torch

import torchxray as tx
from tests.handwritten import CASES
from tests.handwritten.dictconfigs import GaussianPolicy
from torchxray._forms.sources.fills import filled


def _opts(log_std0: float) -> argparse.Namespace:
    return argparse.Namespace(
        state_dim=3, action_dim=2, widths=[4], nonlinearity="tanh", log_std0=log_std0
    )


def test_a_tensor_filled_with_a_field_reads_back() -> None:
    assert filled(GaussianPolicy, GaussianPolicy(_opts(-0.75)), "opts.log_std0") == [-0.75]
    trained = GaussianPolicy(_opts(-0.75))
    with torch.no_grad():
        trained.log_std[0] = 0.1  # moved by training: no longer one value
    assert filled(GaussianPolicy, trained, "opts.log_std0") == []


def test_an_argparse_namespace_form_is_exact() -> None:
    f = tx.form(CASES["namespace_policy_argparse"].build())
    assert not f.inexact
    assert vars(f["opts"].value) == dict(
        widths=[24, 16], nonlinearity="silu", state_dim=9, action_dim=2, log_std0=-1.0
    )
    assert f["opts"].origin == "default"  # log_std0 a hair away rebuilds alike: a guess
