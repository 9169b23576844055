"""A forward that hands a tensor's values to Python (``.numpy()``, ``.tolist()``, ``.item()``):
a fake probe names the op and offers the real probe, never blaming the example inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._fake.values import data_dependent_op


class ViaNumpy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.asarray(x.numpy()) * 2)


class ViaList(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tensor(x.tolist()) * 2


class Net(nn.Module):
    def __init__(self, head: nn.Module) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.head = head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lin(x))


@pytest.mark.parametrize(("head", "named"), [(ViaNumpy(), ".numpy()"), (ViaList(), ".tolist()")])
def test_a_fake_probe_names_the_op_that_needs_values_and_offers_the_real_one(
    head: nn.Module, named: str
) -> None:
    model, x = Net(head), torch.randn(2, 4)
    rep = tx.probe(model, x)
    assert not rep.ok and rep.error is not None and rep.error.path == "head"
    assert f"fake tensors cannot run {named}" in rep.error.message or named in rep.error.message
    assert "fake tensors cannot run" in rep.error.message
    assert "mode='real'" in rep.error.hint and "inputs" not in rep.error.hint
    assert rep.error.remedy == "real"
    assert rep["lin"].output_shapes == ((2, 4),)  # the records up to there are kept
    with torch.no_grad():
        real = tx.probe(model, x, mode="real")
    assert real.ok and real["head"].output_shapes == ((2, 4),)


def test_a_real_run_refused_numpy_is_not_blamed_on_fake_tensors() -> None:
    # A wrapper subclass (DTensor, a quantized weight) refuses .numpy() in the same words; in a
    # real run that has nothing to do with fake tensors.
    class Refuses(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    rep = tx.probe(Refuses(), torch.randn(2, 4), mode="real")
    assert not rep.ok and rep.error is not None
    assert "fake tensors" not in rep.error.message and rep.error.remedy == ""


def test_memory_of_a_numpy_forward_runs_it_on_the_cpu_and_names_numpy() -> None:
    rep = tx.memory(Net(ViaNumpy()), torch.randn(2, 4))
    assert len(rep.notes) == 1 and ".numpy()" in rep.notes[0] and "'head'" in rep.notes[0]
    assert rep.params == 20 * 4


def test_data_dependent_op_reads_torchs_numpy_refusal() -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), pytest.raises(RuntimeError) as caught:
        torch.randn(2).numpy()
    assert data_dependent_op(caught.value) == ".numpy()"
    assert data_dependent_op(RuntimeError("shapes cannot be multiplied")) is None
