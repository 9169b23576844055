"""Identical blocks replay under what wraps their forward (issue 58, part 2), and where they cannot,
the fake probe's report says why in a sentence (``rep.not_replayed``, also in the widget's status).

The wrappers are the ones models meet: kernels' ``use_kernelized_func`` (transformers 5.25) gives
every layer its own dict of parameter-free kernel modules, ``kernelize`` and user decorators set a
forward per instance, torch's checkpoint wrapper holds a ``partial(checkpoint, ...)`` per block.
Each memoised probe must equal the probe that runs every block.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
import torch
from torch import nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

from torchxray import probe
from torchxray._view.probe_panes import probe_summary
from torchxray.probe import run_probe


class Kernel(nn.Module):
    """A function made a module, as ``use_kernel_forward_from_hub`` makes one: no state."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Block(nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)
        # kernels' new_init: a private dict of kernel modules per instance, not submodules
        self.__dict__["_kernel_funcs"] = {"act": Kernel()}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self._kernel_funcs["act"](self.lin(x)))


def _decorate(block: nn.Module) -> None:
    forward = block.forward

    def inner(*args: Any, **kwargs: Any) -> Any:  # a user's per-instance decorator
        return forward(*args, **kwargs)

    block.forward = inner  # type: ignore[method-assign]


def _kernelize(block: nn.Module) -> None:
    block.forward = types.MethodType(Block.forward, block)  # type: ignore[method-assign]


def _stack(kind: str, n: int = 5) -> nn.Module:
    blocks: list[nn.Module] = [Block() for _ in range(n)]
    if kind == "decorated":
        for b in blocks:
            _decorate(b)
    elif kind == "kernelized":
        for b in blocks:
            _kernelize(b)
    elif kind == "checkpointed":
        blocks = [checkpoint_wrapper(b) for b in blocks]
    return nn.Sequential(*blocks).eval()


@pytest.mark.parametrize("kind", ["kernel_dict", "decorated", "kernelized", "checkpointed"])
def test_blocks_replay_under_wrappers(kind: str) -> None:
    model = _stack(kind)
    x = torch.randn(2, 8)
    rep = probe(model, x)
    full = run_probe(model, (x,), {}, memoise=False)
    assert rep.ok and set(rep.memoised) == {"1", "2", "3", "4"}, rep.not_replayed
    assert rep.records == full.records and rep.total_flops == full.total_flops
    assert rep.not_replayed == ()


class Opaque:
    pass


def test_the_report_says_why_blocks_did_not_replay() -> None:
    hooked = _stack("kernel_dict")
    for b in hooked:
        b.lin.register_forward_hook(lambda m, i, o: None)
    rep = probe(hooked, torch.randn(2, 8))
    assert rep.ok and not any(p in rep.memoised for p in "1234")
    (said,) = rep.not_replayed
    assert (
        said.startswith("Block blocks 0 and 4 more ran each time")
        and "in lin, it has hooks" in said
    )

    held = _stack("kernel_dict")
    for b in held:
        b.state = Opaque()  # one object per block: nothing tells they behave alike
    rep = probe(held, torch.randn(2, 8))
    assert rep.not_replayed and "attribute 'state' holds a different Opaque" in rep.not_replayed[0]
    status = probe_summary(rep, None, 1)["status"]
    assert "not replayed" in status and "state" in status

    # Blocks of other shapes are not alike: nothing to say.
    mixed = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
    assert probe(mixed, torch.randn(1, 4)).not_replayed == ()


class Keyed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, extra: Any) -> torch.Tensor:
        return self.lin(x)


def test_a_refused_call_is_named() -> None:
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Keyed() for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for b in self.blocks:
                x = b(x, Opaque())
            return x

    rep = probe(Outer(), torch.randn(2, 4))
    assert rep.ok and rep.not_replayed
    assert "its call passes a Opaque" in rep.not_replayed[0]


class _Sampler(nn.Module):
    """An energy model's sampler: its forward turns autograd on and differentiates the energy of
    its input through alike blocks (a JEM's SGLD step)."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            energy = self.blocks(x).sum()
            (g,) = torch.autograd.grad(energy, x)
        return (x - 0.1 * g).detach()


def test_blocks_autograd_records_are_run_not_replayed() -> None:
    # A replayed output is a new tensor no graph joins to the block's inputs: the gradient
    # above would fail ("not been used in the graph"). Such calls run (``_fake/memo.py``).
    rep = probe(_Sampler(), torch.randn(2, 8))
    assert rep.ok and rep.mode == "fake", rep.error
    assert not any(p.startswith("blocks.") for p in rep.memoised)
    assert any("autograd" in s for s in rep.not_replayed)
