"""`tx.memory` replays repeated blocks (`_memory.memo`) and gives the report a full trace gives,
field by field, per module: params, buffers, grads, optimizer, activations and peak.

The reference is ``run_memory(..., memoise=False)``, which traces every block. The tests also
check that the fast path is taken where it should be (`report.memoised`), and refused where a
replay could not repeat what the block did.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from fixtures.real import _DECODER, ENTRIES, build
from torch import nn

from torchxray import demo
from torchxray.memory import MemoryReport, run_memory


def assert_same(
    model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], **options: Any
) -> MemoryReport:
    memo = run_memory(model, args, kwargs, **options)
    full = run_memory(model, args, kwargs, memoise=False, **options)
    assert not full.memoised
    assert list(memo.records) == list(full.records)
    for path, rec in full.records.items():  # one module at a time, so a failure names it
        assert memo.records[path] == rec, path
    assert dataclasses.replace(memo, memoised=()) == full
    return memo


@pytest.mark.parametrize("name", list(ENTRIES))
def test_zoo_memoised_equals_full(name: str) -> None:
    model, args, kwargs = build(name)
    assert_same(model, args, kwargs)
    # A training step traces every block (its backward needs each block's graph): same report.
    rep = assert_same(model, args, kwargs, training=True, optimizer="adamw")
    assert rep.memoised == ()


def _deep(name: str, layers: int = 5) -> tuple[nn.Module, tuple[Any, ...], dict[str, Any]]:
    """A zoo transformers model with more layers, so that some are replayed."""
    import transformers

    configs = {
        "hf-llama": ("LlamaConfig", "LlamaForCausalLM", {**_DECODER, "num_hidden_layers": layers}),
        "hf-mixtral": (
            "MixtralConfig",
            "MixtralForCausalLM",
            {**_DECODER, "num_hidden_layers": layers, "num_local_experts": 4},
        ),
        "hf-gpt2": (
            "GPT2Config",
            "GPT2LMHeadModel",
            {"vocab_size": 128, "n_embd": 64, "n_layer": layers, "n_head": 4, "n_positions": 64},
        ),
    }
    config_cls, model_cls, config = configs[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, config_cls)(**config)
    model = getattr(transformers, model_cls)(cfg).eval()
    _, args, kwargs = build(name)
    return model, args, kwargs


@pytest.mark.parametrize("name", ["hf-llama", "hf-mixtral", "hf-gpt2"])
def test_deep_decoders_replay_their_layers_and_equal_the_full_trace(name: str) -> None:
    model, args, kwargs = _deep(name)
    rep = assert_same(model, args, kwargs)
    layers = {p for p in rep.memoised if p.count(".") == 2 and p.split(".")[-1].isdigit()}
    # Two layers run (the second confirms the first), the rest are replayed.
    assert len(layers) == 3, rep.memoised
    assert rep.peak > rep.params


def test_meta_model_of_many_layers_replays_them() -> None:
    torch.manual_seed(0)
    model = demo.llama_like(layers=6).to(device="meta").eval()
    tokens = demo.tokens(vocab=100).to("meta")
    rep = assert_same(model, (tokens,), {})
    assert len(rep.memoised) >= 4


def test_vit_blocks_are_replayed() -> None:
    model, args, kwargs = build("timm-vit_tiny")
    rep = assert_same(model, args, kwargs)
    assert any(p.startswith("blocks.") for p in rep.memoised), rep.memoised


class _Caching(nn.Module):
    """A block that keeps a tensor on itself: a replay would not keep it, so it is refused."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        self.last = y * 2  # left alive after the call: bytes a replay would not count
        return y


class _Aliasing(nn.Module):
    """A block returning a view of its input: no new storage, which a fresh output would be."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape)


class _Keeping(nn.Module):
    """A block that appends its output to a list outside it."""

    kept: list[torch.Tensor] = []

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.lin(x))
        self.kept.append(y + 1)
        return y


@pytest.mark.parametrize("block", [_Caching, _Aliasing, _Keeping])
def test_blocks_a_replay_could_not_repeat_are_run_every_time(block: type[nn.Module]) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(*[block() for _ in range(5)])
    x = torch.randn(4, 16)
    rep = assert_same(model, (x,), {})
    assert rep.memoised == ()
    assert not any("FakeTensor" in type(v).__name__ for m in model for v in vars(m).values())
    _Keeping.kept.clear()


def test_plain_repeated_blocks_are_replayed_with_the_same_peaks() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        *[nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32)) for _ in range(6)]
    )
    rep = assert_same(model, (torch.randn(8, 32),), {})
    assert rep.memoised == ("2", "3", "4", "5")
    assert rep["5.1"].peak == rep["4.1"].peak > 0


class _Odd(nn.Module):
    """Weights a forward meets in odd ways: two parameters viewing one storage, a weight inside a
    list (torch.cat), and a buffer the forward replaces."""

    def __init__(self) -> None:
        super().__init__()
        big = torch.randn(16, 8)
        self.p1, self.p2 = nn.Parameter(big[:8]), nn.Parameter(big[8:])
        self.lin = nn.Linear(8, 8)
        self.register_buffer("table", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.table = self.table * 2  # a buffer replaced: the real one must be put back
        w = torch.cat([self.lin.weight, self.p1, self.p2])
        return (x @ w.t()).sum(-1, keepdim=True) * self.table.sum()


def test_weights_made_fake_as_ops_meet_them_count_as_all_made_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A forward's weights are made fake lazily (`LazyWeights`); a training step makes them all
    # first. Forcing the latter for a forward (as offloaded weights do) must not change a figure.
    import sys

    torch.manual_seed(0)
    model = nn.Sequential(_Odd(), nn.Linear(1, 4), nn.Linear(4, 4))
    table = model[0].table
    x = torch.randn(3, 8)
    lazy = run_memory(model, (x,), {})
    assert model[0].table is table
    module = sys.modules["torchxray._memory.step"]
    real_devices = module.execution_devices
    monkeypatch.setattr(
        module, "execution_devices", lambda ms: {**real_devices(ms), -1: torch.device("cpu")}
    )
    eager = run_memory(model, (x,), {})
    assert model[0].table is table
    assert lazy == eager
    assert lazy.params == sum(p.numel() * 4 for p in model.parameters())
