"""report.nonfinite: the first module whose outputs hold NaN/Inf while its inputs did not."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from fixtures.real import build

import torchxray as tx
from torchxray._probe import finite as finite_mod


def _poison(t: torch.Tensor, value: float) -> None:
    with torch.no_grad():
        t.view(-1)[0] = value


def test_a_nan_weight_in_a_timm_model() -> None:
    model, args, _ = build("timm-resnet18")
    clean = tx.probe(model, *args, mode="real")
    assert clean.ok and clean.nonfinite is None
    _poison(model.layer2[0].conv2.weight, float("nan"))
    rep = tx.probe(model, *args, mode="real")
    assert rep.ok and rep.nonfinite is not None
    assert rep.nonfinite.path == "layer2.0.conv2" and rep.nonfinite.cls == "Conv2d"
    assert rep.nonfinite is rep["layer2.0.conv2"]  # the record itself
    assert tx.probe(model, *args).nonfinite is None  # fake tensors have no values to judge
    assert torch.isnan(model.layer2[0].conv2.weight).any() and not model.training


def test_an_inf_weight_in_a_transformers_model() -> None:
    model, _, kwargs = build("hf-llama")
    _poison(model.model.layers[1].mlp.up_proj.weight, float("inf"))
    rep = tx.probe(model, mode="real", **kwargs)
    assert rep.ok and rep.nonfinite is not None
    assert rep.nonfinite.path == "model.layers.1.mlp.up_proj"


class _Parent(nn.Module):
    """A functional op in the parent's own forward makes the NaN its child then receives."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first(x)
        return self.second(torch.sqrt(x - 1e6))  # negative: NaN, made by no submodule


def test_a_module_fed_nan_is_passed_over_for_the_one_that_made_it() -> None:
    model = nn.Sequential(nn.Linear(4, 4), _Parent(), nn.ReLU())
    rep = tx.probe(model, torch.randn(2, 4), mode="real")
    assert rep.nonfinite is not None and rep.nonfinite.path == "1"  # not "1.second"


def test_nan_inputs_blame_no_module() -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    x[0, 0] = float("nan")
    assert tx.probe(model, x, mode="real").nonfinite is None


class _Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 60000


def test_finite_values_whose_sum_overflows_are_not_blamed() -> None:
    model = nn.Sequential(_Scale()).half()
    x = torch.ones(64, dtype=torch.float16)
    assert torch.isinf(_Scale()(x).sum())  # the cheap test says "maybe"; the exact one says no
    assert tx.probe(model, x, mode="real").nonfinite is None


def test_checks_stop_at_the_first_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = finite_mod.finite

    def counted(value: object) -> bool:
        seen.append(1)
        return real(value)

    monkeypatch.setattr(finite_mod, "finite", counted)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(10)])
    x = torch.randn(2, 4)
    tx.probe(model, x, mode="real")
    assert len(seen) == 11  # every call's outputs, the root's included, while nothing is found
    seen.clear()
    _poison(model[0].weight, float("nan"))
    rep = tx.probe(model, x, mode="real")
    assert rep.nonfinite is not None and rep.nonfinite.path == "0"
    assert len(seen) == 2  # the first call's outputs, then its inputs; nothing after


@pytest.mark.cuda
def test_on_cuda_flags_are_read_after_the_run() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    model, args, _ = build("timm-resnet18")
    model = model.cuda()
    assert tx.probe(model, *args, mode="real").nonfinite is None
    _poison(model.layer3[1].bn1.running_var, -1.0)  # sqrt of a negative variance: NaN
    rep = tx.probe(model, *args, mode="real")
    assert rep.ok and rep.nonfinite is not None and rep.nonfinite.path == "layer3.1.bn1"


def test_the_deferred_cuda_search_on_cpu_tensors() -> None:
    # The CUDA path's logic (flags kept per call, read after the run), run here without a GPU.
    search = finite_mod.NonFinite(real=True, cuda=True)
    ok, bad = torch.ones(3), torch.tensor([1.0, float("inf")])
    search.check("fed nan", bad, (bad,), {})
    search.check("made nan", (ok, {"x": bad}), (ok,), {"mask": torch.ones(2, dtype=torch.bool)})
    search.check("later", bad, (ok,), {})
    assert search.found is None and search.active  # nothing is read before the run ends
    search.resolve()
    assert search.found == "made nan"
