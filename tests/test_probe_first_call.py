"""What a library sets up on a module's first call works under the probe as in the person's own
first forward (issue 58): hooks registered on layers during the run, before those layers' first
call, run under fake and real probes (transformers' output capture filled ``hidden_states``
there, and both probes failed with "tuple index out of range"), and the model is left as found.
`tx.memory`'s real CPU step puts back what the forward wrote too."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchxray as tx
from tests.zoo.invariants import state_fingerprint
from tests.zoo.leftovers import diff_python_state, python_state


class Capturing(nn.Module):
    """Registers output-collecting hooks on its layers at its first call, as transformers does."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.collected: list[torch.Tensor] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not getattr(self, "_hooks_installed", False):
            for layer in self.layers:
                layer.register_forward_hook(self._keep)
            self._hooks_installed = True
        self.collected = []
        for layer in self.layers:
            x = layer(x)
        hidden, self.collected = self.collected, None
        return torch.stack([hidden[-2], hidden[-1]])

    def _keep(self, module: nn.Module, args: object, out: torch.Tensor) -> None:
        if self.collected is not None:
            self.collected.append(out)


@pytest.mark.parametrize("mode", ["fake", "real"])
def test_hooks_registered_before_a_layers_first_call_run_under_the_probe(mode: str) -> None:
    model = Capturing().eval()
    x = torch.randn(2, 4)
    before, state = state_fingerprint(model), python_state(model)
    rep = tx.probe(model, x, mode=mode)
    assert rep.ok, rep.error
    assert rep[""].output_shapes == ((2, 2, 4),)
    assert rep["layers.1"].calls == 1  # each layer still recorded once, through its hooks' path
    assert state_fingerprint(model) == before  # its hooks and its flag gone, as found
    assert diff_python_state(state, python_state(model)) == []
    assert "_hooks_installed" not in vars(model)
    with torch.no_grad():
        assert model(x).shape == (2, 2, 4)  # the person's first forward still sets up


def test_a_transformers_tower_called_with_output_hidden_states() -> None:
    transformers = pytest.importorskip("transformers")

    class Tower(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            cfg = transformers.CLIPVisionConfig(
                hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                num_attention_heads=2, image_size=16, patch_size=8,
            )  # fmt: skip
            self.vision_tower = transformers.CLIPVisionModel(cfg)
            self.proj = nn.Linear(16, 8)

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            out = self.vision_tower(pixel_values, output_hidden_states=True)
            return self.proj(out.hidden_states[-2][:, 1:])

    model = Tower().eval()
    x = torch.randn(1, 3, 16, 16)
    before = state_fingerprint(model)
    for mode in ("fake", "real"):
        rep = tx.probe(model, x, mode=mode)
        assert rep.ok, f"{mode}: {rep.error}"
        assert rep[""].output_shapes == ((1, 4, 8),)
        assert state_fingerprint(model) == before


class SetsUpThenBranches(Capturing):
    """A first-call set-up and a branch on a value: the fake step stops, memory runs it for real."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        return out * 2 if out.sum().item() > 0 else out


def test_memory_real_cpu_step_puts_back_what_the_forward_wrote() -> None:
    model = SetsUpThenBranches().eval()
    state, before = python_state(model), state_fingerprint(model)
    rep = tx.memory(model, torch.randn(2, 4))
    assert any("ran for real on the CPU" in n for n in rep.notes), rep.notes
    assert diff_python_state(state, python_state(model)) == []
    assert state_fingerprint(model) == before
