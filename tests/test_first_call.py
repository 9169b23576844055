"""What a library sets up on a module's first call works under the probe as in the user's own first
forward (issue 58, part 4): transformers 5 installs its output-capturing hooks on a model's first
call, so a LLaVA-style wrapper that calls its vision tower with ``output_hidden_states=True`` got
empty hidden states under both probes ("tuple index out of range", blamed on the inputs). And a
failure that a bare forward does not have is torchxray's: its hint never blames the inputs.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._probe.failure import OWN_FAILURE

transformers = pytest.importorskip("transformers")


def _tower(kind: str) -> nn.Module:
    small = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4)
    small.update(image_size=32, patch_size=8, attn_implementation="eager")
    if kind == "clip":
        return transformers.CLIPVisionModel(transformers.CLIPVisionConfig(**small))
    return transformers.SiglipVisionModel(transformers.SiglipVisionConfig(**small))


class Llava(nn.Module):
    """A hand-written multimodal wrapper: the projector reads the second-to-last hidden state."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.vision = _tower(kind)
        self.proj = nn.Linear(32, 16)

    def forward(self, pixels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.vision(pixels, output_hidden_states=True, output_attentions=True)
        return self.proj(out.hidden_states[-2]), torch.stack(out.attentions)


def _hooks(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_first_call_hooks_work_under_both_probes(kind: str) -> None:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Llava(kind).eval()
    x = torch.randn(1, 3, 32, 32)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for mode in ("fake", "real"):
        rep = tx.probe(model, x, mode=mode)
        assert rep.ok, rep.error
        tokens = 17 if kind == "clip" else 16
        # Every layer's attention came back: inside the layers, the hooks ran on every call (the
        # fake probe replays no layer whose forward hooked it, and says so).
        assert rep[""].output_shapes == ((1, tokens, 16), (3, 1, 4, tokens, tokens))
        if mode == "fake":
            assert any("registered hooks" in s for s in rep.not_replayed)
        # The model is as before its first call: the library's hooks and its flag together.
        assert _hooks(model) == 0
        assert not getattr(model.vision, "_output_capturing_hooks_installed", False)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())
    with torch.no_grad():
        bare = model(x)
    assert tuple(bare[1].shape) == (3, 1, 4, tokens, tokens)


class Picky(nn.Module):
    """A forward that fails only when something replaced its child's call (as a probe does)."""

    def __init__(self) -> None:
        super().__init__()
        self.child = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if "_call_impl" in vars(self.child) or "forward" in vars(self.child):
            return ()[0]  # type: ignore[misc]
        return self.child(x)


def test_a_failure_a_bare_forward_does_not_have_is_not_blamed_on_the_inputs() -> None:
    model = Picky()
    x = torch.randn(2, 4)
    model(x)  # runs bare
    for mode in ("fake", "real"):
        rep = tx.probe(model, x, mode=mode)
        assert not rep.ok and rep.error.hint == OWN_FAILURE
        assert "inputs'" in rep.error.hint and "check" not in rep.error.hint
    # A failure the bare forward has too keeps its hint about the inputs.
    rep = tx.probe(nn.Linear(4, 4), torch.randn(2, 5))
    assert not rep.ok and rep.error.hint != OWN_FAILURE and "input" in rep.error.hint
