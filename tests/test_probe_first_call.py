"""What a library sets up on a module's first call works under the probe as in the person's own
first forward (issue 58): hooks registered on layers during the run, before those layers' first
call, run under fake and real probes (transformers' output capture filled ``hidden_states``
there, and both probes failed with "tuple index out of range"), and the model is left as found.
`tx.memory`'s real CPU step puts back what the forward wrote too. The transformers case itself
(a CLIP tower called with ``output_hidden_states=True``) is in `tests/test_handwritten.py`
("llava_clip_tower")."""

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
