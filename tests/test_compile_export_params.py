"""tx.compile_check's torch.export half hides the parameters of stood-in blocks from export
(`_compile.export._Unregistered`) and reports what export says of the model as it is: the same
failures with and without hiding, a forward that reads a stood-in block's parameter still
exports, and every parameter registry is put back."""

from __future__ import annotations

from typing import Any, cast

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._compile import export as export_mod

pytest.importorskip("torch._dynamo")


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(self.norm(x)) * self.scale


class Failing(Block):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum().item() > 0:  # export cannot branch on a value
            return x
        return super().forward(x)


class Stack(nn.Module):
    def __init__(self, block: type[Block] = Block, peek: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(block() for _ in range(4))
        self.peek = peek

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        if self.peek:  # the root reads a parameter and a buffer of blocks stood in for
            fc, last = cast(Block, self.blocks[2]).fc, cast(Block, self.blocks[3])
            x = x @ fc.weight * cast(torch.Tensor, last.scale)
        return x


def _registries(model: nn.Module) -> list[tuple[int, list[tuple[str, int]]]]:
    return [
        (id(m._parameters), [(n, id(p)) for n, p in m._parameters.items()]) for m in model.modules()
    ]


def _no_hiding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_mod._Unregistered, "__enter__", lambda self: self)


@pytest.mark.parametrize(
    "model", [Stack(), Stack(peek=True), Stack(Failing)], ids=["clean", "peek", "failing"]
)
def test_export_failures_are_the_same_with_parameters_hidden(
    model: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = torch.randn(2, 8)
    # Real mode: a fake probe stops at .item(), so the blocks after the first are not recorded.
    options = {"mode": "real"}
    before = _registries(model)
    hidden = tx.compile_check(model, x, options=options)
    assert _registries(model) == before  # every registry put back, the same dict objects
    _no_hiding(monkeypatch)
    plain = tx.compile_check(model, x, options=options)
    assert hidden.export == plain.export
    if isinstance(model.blocks[0], Failing):
        assert [f.path for f in hidden.export] == [f"blocks.{i}" for i in range(4)]
    else:
        assert hidden.export == ()


def test_stood_in_blocks_parameters_are_out_of_export(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, int]] = []
    real = torch.export.export

    def spy(model: nn.Module, *args: Any, **kwargs: Any) -> Any:
        seen.append((len(list(model.parameters())), len(list(model.buffers()))))
        return real(model, *args, **kwargs)

    monkeypatch.setattr(torch.export, "export", spy)
    model = Stack()
    tx.compile_check(model, torch.randn(2, 8))
    # block 0's four parameters and buffer, and the one parameter all 3 stand-ins may read
    assert seen == [(4 + 1, 1)]
    assert len(list(model.parameters())) == 16 and len(list(model.buffers())) == 4
