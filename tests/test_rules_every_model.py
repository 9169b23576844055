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


class Select(nn.Module):
    """A data-dependent size: the rows of `x` whose first column is positive."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.pick = Pick()
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pick(self.inner(x))).sum(0)


class Pick(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[x[:, 0] > 0]


def test_a_data_dependent_op_is_named_with_the_module_and_the_cure() -> None:
    model, x = Select(), torch.randn(16, 4)
    rep = tx.probe(model, x)
    assert not rep.ok and rep.error is not None
    assert rep.error.path == "pick" and rep.error.remedy == "real"
    assert "fake tensors cannot run aten.nonzero" in rep.error.message
    assert "mode='real'" in rep.error.hint and "inputs" not in rep.error.hint
    assert rep["inner"].output_shapes == ((16, 4),)  # the records up to there are kept
    real = tx.probe(model, x, mode="real")
    assert real.ok and real["head"].input_shapes[0][1] == 4
    with torch.device("meta"):
        meta = Select()
    rep = tx.probe(meta, torch.empty(16, 4, device="meta"))
    assert rep.error is not None and rep.error.remedy == "" and "CPU" in rep.error.hint


def test_memory_of_a_data_dependent_step_runs_it_on_the_cpu_and_says_so() -> None:
    model, x = Select(), torch.randn(16, 4)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    rep = tx.memory(model, x, training=True, optimizer="adamw")
    want = sum(p.numel() * 4 for p in model.parameters())
    assert (rep.params, rep.grads, rep.optimizer) == (want, want, 2 * want)
    assert rep.activations > 0 and rep.peak >= rep.params + rep.grads + rep.optimizer
    assert len(rep.notes) == 1 and "ran for real on the CPU" in rep.notes[0]
    assert "aten.nonzero" in rep.notes[0] and "'pick'" in rep.notes[0]
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_the_cpu_meter_counts_as_the_fake_step_does() -> None:
    from torchxray._memory import real

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8))
    x = torch.randn(32, 64)
    fake = tx.memory(model, x, training=True)
    params = list(model.parameters())
    step = real.measure(model, list(model.named_modules()), params, [], (x,), {}, True, None, True)
    assert sum(step.trace.saved.values()) == fake.activations
    assert step.trace.peak == fake.peak


class Attends(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 4, batch_first=True)
        self.fc = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, _ = self.attn(x, x, x)
        return self.fc(x + a)


def test_a_fused_fast_path_does_not_hide_the_module_that_fails() -> None:
    model = Attends().eval()
    model.attn = nn.MultiheadAttention(32, 4, batch_first=True).eval()  # no longer fits
    x = torch.randn(2, 5, 64)
    for mode in ("fake", "real"):
        rep = tx.probe(model, x, mode=mode)
        assert rep.error is not None and rep.error.path == "attn", (mode, rep.error)
    rep = tx.probe(model, x)
    assert rep.notes and "fast paths" in rep.notes[0]


class Experts(nn.Module):
    """A kernel whose meta version refuses float32 (grouped matmul, as MoE experts call)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(2, 16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        offs = torch.tensor([4, 8], dtype=torch.int32, device=x.device)
        return torch._grouped_mm(x, self.w, offs=offs)


@pytest.mark.skipif(not hasattr(torch, "_grouped_mm"), reason="torch without _grouped_mm")
def test_a_kernel_refusing_a_dtype_on_meta_gets_a_hint_naming_it_and_the_cure() -> None:
    with torch.device("meta"):
        model = Experts()
    rep = tx.probe(model, torch.empty(8, 16, device="meta"))
    assert rep.error is not None and rep.error.path == ""
    assert "refuses float32" in rep.error.hint and "bfloat16" in rep.error.hint
    assert "inputs" not in rep.error.hint
