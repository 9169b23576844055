"""Stage 1 of a form (``_forms/signature.py``): what the constructor takes. ``self`` dropped, a
hand-set ``__signature__`` honoured, torch's RNNs shown with ``RNNBase``'s fields, the user's
class behind a parametrized one; anything without a Python constructor refused in one sentence."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from torch.nn.utils import parametrizations

from torchxray._forms.signature import constructor, signature


def test_self_is_dropped_and_the_class_behind_a_parametrization_is_rebuilt() -> None:
    conv = parametrizations.weight_norm(nn.Conv2d(3, 4, 3))
    ctor = constructor(conv)
    assert ctor.cls is nn.Conv2d and ctor.module is conv
    assert list(ctor.signature.parameters)[:2] == ["in_channels", "out_channels"]


def test_a_hand_set_signature_and_the_rnn_overrides() -> None:
    class Wrapped(nn.Module):
        __signature__ = inspect.Signature(
            [inspect.Parameter("width", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        )

        def __init__(self, *args: int) -> None:
            super().__init__()

    assert list(signature(Wrapped).parameters) == ["width"]
    lstm = signature(nn.LSTM).parameters
    assert "proj_size" in lstm and "nonlinearity" not in lstm
    assert list(signature(nn.RNN).parameters)[3] == "nonlinearity"


def test_what_has_no_python_constructor_is_refused_in_one_sentence() -> None:
    with pytest.raises(TypeError, match="expects an nn.Module or an nn.Module subclass, got int"):
        constructor(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got the class str"):
        constructor(str)  # type: ignore[arg-type]
    scripted = torch.jit.script(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="ScriptModule has no Python constructor"):
        constructor(scripted)
