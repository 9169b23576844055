"""Rules that hold for every model, whatever library it comes from (the ecosystem sweep,
`bench.sweep`, measures them at scale): the probe's own bookkeeping never fails a forward that runs
bare; the forward runs in the model's own train/eval mode and leaves buffers and the RNG as they
were; a module reached by two paths is put back exactly after a memory trace."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
import torch
from torch import nn
from torch.utils import _pytree as pytree

import torchxray as tx


class Output(OrderedDict):  # type: ignore[type-arg]
    """An output type registered with pytree without key functions, as diffusers' BaseOutput."""


pytree.register_pytree_node(
    Output,
    lambda o: (list(o.values()), list(o.keys())),
    lambda values, keys: Output(zip(keys, values)),
)


class Returns(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> Output:
        y = self.fc(x)
        return Output(sample=y, extra=[y, x])


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_an_output_type_without_pytree_keys_is_named_by_its_keys(mode: str) -> None:
    rep = tx.probe(Returns(), torch.randn(2, 4), mode=mode)
    assert rep.ok, rep.error
    names = [leaf.name for leaf in rep[""].outputs if not isinstance(leaf, str)]
    assert names == ["sample", "extra[0]", "extra[1]"]
    assert rep[""].output_shapes == ((2, 3), (2, 3), (2, 4))
    assert rep.limitations == ()


class Counter(nn.Module):
    """Dropout and BatchNorm: what train mode changes (the RNG, running statistics)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.drop(self.bn(x))
        return {"loss": y.sum()} if self.training else y


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_the_forward_runs_in_the_models_own_mode_and_changes_nothing(mode: str) -> None:
    model = Counter().train()
    x = torch.randn(8, 4)
    buffers = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.random.get_rng_state()
    rep = tx.probe(model, x, mode=mode)
    assert rep.ok, rep.error
    assert rep[""].outputs[0].name == "loss"  # what this model returns in train mode
    assert rep[""].output_shapes == ((),)
    assert model.training and model.bn.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, buffers[k]), k  # running stats and num_batches_tracked
    assert torch.equal(torch.random.get_rng_state(), rng)
    model.eval()
    rep = tx.probe(model, x, mode=mode)
    assert rep.ok and rep[""].output_shapes == ((8, 4),) and not model.training


class Shared(nn.Module):
    """One block reached by two paths (``self.pos`` and ``self.blocks[0].pos``)."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = nn.Linear(4, 4)
        self.blocks = nn.ModuleList([nn.Module()])
        self.blocks[0].pos = self.pos
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks[0].pos(self.pos(x)))


def test_memory_puts_back_a_module_reached_by_two_paths() -> None:
    from torch._subclasses.fake_tensor import FakeTensor

    model = Shared()
    before = {id(p) for p in model.parameters()}
    rep = tx.memory(model, torch.randn(3, 4), training=True, optimizer="adamw")
    assert not any(isinstance(t, FakeTensor) for t in model.parameters())
    assert {id(p) for p in model.parameters()} == before
    want = sum(p.numel() * 4 for p in model.parameters())
    assert (rep.params, rep.grads, rep.optimizer) == (want, want, 2 * want)
