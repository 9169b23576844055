"""`tx.memory`: weights, gradients and optimizer state exact; activations measured on fake
tensors match the bytes autograd really saves in a real forward of the same model; the model is
left exactly as it was; bad input gets a clear message."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from fixtures.real import build
from torch import nn
from torch.nn.modules import module as module_globals

import torchxray as tx


def _nbytes(ts: Any) -> int:
    return sum(t.numel() * t.element_size() for t in ts)


def _real_saved(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Bytes autograd saves for backward in a real training forward: each storage once, the
    model's own weights and buffers left out (they are counted as weights)."""
    weights = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers())}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    was = model.training
    model.train()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(*args, **kwargs)
    finally:
        model.train(was)
    return sum(saved.values())


def _state(model: nn.Module) -> tuple[Any, ...]:
    return (
        [(n, id(t), t.device, t.dtype, t.requires_grad) for n, t in model.named_parameters()],
        [(n, id(t)) for n, t in model.named_buffers()],
        [m.training for m in model.modules()],
        [p.grad for p in model.parameters()],
        [
            (len(m._forward_hooks), len(m._forward_pre_hooks), len(m._backward_hooks))
            for m in model.modules()
        ],
        len(module_globals._global_forward_hooks),
        len(module_globals._global_forward_pre_hooks),
        [sorted(vars(m)) for m in model.modules()],
    )


@pytest.mark.parametrize(
    "name", ["timm-resnet18", "timm-vit_tiny", "hf-gpt2", "hf-llama", "hf-mixtral", "hf-t5"]
)
def test_training_activations_match_what_autograd_really_saves(name: str) -> None:
    model, args, kwargs = build(name)
    real = _real_saved(model, args, kwargs)
    before = _state(model)
    rep = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
    assert _state(model) == before  # flags, hooks, grads, tensors and attributes as they were
    assert real > 0
    assert abs(rep.activations - real) <= 0.10 * real, (rep.activations, real)
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert rep.params == _nbytes(model.parameters())
    assert rep.buffers == _nbytes(model.buffers())
    assert rep.grads == _nbytes(trainable)
    assert rep.optimizer == 2 * _nbytes(trainable)
    # Charged to the modules that saved them: the per-module figures add up to the total.
    assert sum(r.activations_own for r in rep) == rep.activations
    assert rep.peak >= rep.params + rep.grads + rep.optimizer
    inference = tx.memory(model, *args, **kwargs)
    assert inference.activations == inference.grads == inference.optimizer == 0
    assert rep.params < inference.peak < rep.peak


def test_adamw_state_is_exactly_what_a_real_adamw_step_keeps() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    model[0].bias.requires_grad_(False)  # frozen: no gradient, no state
    x = torch.randn(8, 16)
    rep = tx.memory(model, x, training=True, optimizer="adamw")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    model(x).sum().backward()
    real_grads = _nbytes(p.grad for p in model.parameters() if p.grad is not None)
    opt.step()
    real_state = sum(
        _nbytes(v for k, v in s.items() if k != "step" and isinstance(v, torch.Tensor))
        for s in opt.state.values()
    )
    assert rep.grads == real_grads
    assert rep.optimizer == real_state
    # An optimizer that has stepped is read as it is (same figure).
    assert tx.memory(model, x, training=True, optimizer=opt).optimizer == real_state


class _Rounded(nn.Module):
    """An encoder whose codes are cast to bytes: autograd cannot reach the encoder's weights."""

    def __init__(self) -> None:
        super().__init__()
        self.enc, self.dec = nn.Linear(16, 8), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dec(self.enc(x).round().byte().float())


class _Argmax(nn.Module):
    """A classifier that returns its choice: no float output, so no backward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).argmax(-1)


def test_only_weights_the_backward_reaches_get_gradients_and_state() -> None:
    model, x = _Rounded(), torch.randn(8, 16)
    rep = tx.memory(model, x, training=True, optimizer="adamw")
    model(x).sum().backward()
    reached = [p for p in model.parameters() if p.grad is not None]
    assert {id(p) for p in reached} == {id(p) for p in model.dec.parameters()}
    assert rep.grads == _nbytes(reached) and rep.optimizer == 2 * _nbytes(reached)
    assert rep["enc"].grads == 0 and rep["dec"].grads == _nbytes(reached)
    assert not rep.notes
    # No float output depends on a weight: no backward, no gradients, and the report says so.
    rep = tx.memory(_Argmax(), x, training=True, optimizer="adamw")
    assert (rep.grads, rep.optimizer) == (0, 0)
    assert any("no trainable weight gets a gradient" in n for n in rep.notes)


def test_optimizer_instances_are_read_from_their_class_and_options() -> None:
    model = nn.Sequential(nn.Linear(16, 32), nn.Linear(32, 4))
    x = torch.randn(8, 16)
    weights = _nbytes(model.parameters())

    def state(opt: Any) -> int:
        return tx.memory(model, x, training=True, optimizer=opt).optimizer

    assert state(torch.optim.SGD(model.parameters(), lr=0.1)) == 0  # no momentum, no state
    assert state(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)) == weights
    assert state(torch.optim.Adam(model.parameters(), amsgrad=True)) == 3 * weights
    assert state(torch.optim.Adam(model[0].parameters())) == 2 * _nbytes(model[0].parameters())
    groups = [
        {"params": model[0].parameters(), "momentum": 0.9},
        {"params": model[1].parameters()},
    ]
    assert state(torch.optim.SGD(groups, lr=0.1)) == _nbytes(model[0].parameters())
    assert state("sgd") == weights and state("adam") == 2 * weights
    assert all(p.grad is None for p in model.parameters())


def test_peak_follows_tensors_as_they_live_and_die() -> None:
    # Inference, worked by hand: while ReLU runs, the weights, the input x (32x512 floats), the
    # first Linear's output h and ReLU's output are alive; h dies before the last Linear runs.
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x = torch.randn(32, 512)
    act = 32 * 512 * 4
    weights = _nbytes(model.parameters())
    rep = tx.memory(model, x)
    assert rep.peak == weights + 3 * act
    assert rep["1"].peak == rep.peak  # reached inside ReLU's forward
    assert rep["2"].peak == weights + 2 * act + 32 * 10 * 4  # x, relu(h), output
    # Training keeps x (for the first Linear's weight gradient) and ReLU's output (for ReLU's and
    # the last Linear's backward, one storage): 2 x act, on top of weights, grads and momentum.
    train = tx.memory(model, x, training=True, optimizer="sgd")
    assert train.activations == 2 * act
    assert train.peak >= weights * 3 + x.numel() * 4 + train.activations - act


class _NormMadeInForward(nn.Module):
    """A layer made and moved in the forward, as a slot-attention decoder writes it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(512, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        return nn.LayerNorm(h.shape[1:]).to(h.device)(h)


def test_a_fake_run_that_fails_where_the_step_runs_is_measured_for_real() -> None:
    # torch's nn.Module.to() of a layer made under fake tensors cannot swap its fake weights
    # ("Couldn't swap LayerNorm.weight"): that failure is not the inputs', the step runs for real
    # on the CPU and the note says why (``memory.py``).
    model, x = _NormMadeInForward(), torch.randn(32, 512)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for kw in ({}, {"training": True, "optimizer": "sgd"}):
        rep = tx.memory(model, x, **kw)
        assert rep.peak >= _nbytes(model.parameters()) + 32 * 512 * 4
        assert not rep.notes or "ran for real on the CPU" in " ".join(rep.notes)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    # The fake probe either runs it or says in its headline that fake tensors cannot move the
    # layer, naming the real probe, which runs it (``_probe/failure.py``).
    for m in (model.train(), model.eval()):
        rep = tx.probe(m, x, mode="fake")
        assert rep.ok or (
            rep.error.remedy == "real" and "cannot move a layer" in rep.error.headline
        )
        assert tx.probe(m, x, mode="real").ok


def test_tied_and_shared_parameters_count_once() -> None:
    model, args, kwargs = build("hf-gpt2")  # lm_head.weight is wte.weight
    assert model.lm_head.weight is model.transformer.wte.weight
    rep = tx.memory(model, *args, training=True, optimizer="adam", **kwargs)
    unique = {id(p): p for p in model.parameters()}.values()
    assert rep.params == rep.grads == _nbytes(unique)
    shared = nn.Linear(8, 8)
    twice = nn.Sequential(shared, nn.ReLU(), shared)
    rep = tx.memory(twice, torch.randn(2, 8), training=True, optimizer="sgd")
    assert rep.params == rep["0"].params == rep["2"].params == _nbytes(shared.parameters())
    assert rep["2"] is rep["0"]  # an alias path gives the module's one record


def test_meta_models_are_measured_without_memory() -> None:
    import transformers

    cfg = transformers.LlamaConfig(
        vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=2,
    )  # fmt: skip
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    ids = torch.randint(0, 1000, (2, 64))
    rep = tx.memory(model, input_ids=ids, training=True, optimizer="adamw")
    params = sum(p.numel() for p in model.parameters()) * 2
    assert rep.device == "meta" and rep.dtypes == ("bfloat16",)
    assert rep.params == rep.grads == params and rep.optimizer == 2 * params
    assert rep.activations > 0 and rep["model.layers.0"].activations > 0
    assert rep.fits(10**12) and not rep.fits(params)  # a result either way, never an error
    # Layers of one shape save the same bytes; the first also saved the rotary cos/sin tables
    # that every layer reads (a storage saved twice counts once, for its first saver).
    layers = [rep[f"model.layers.{i}"].activations for i in range(4)]
    assert layers[1] == layers[2] == layers[3] < layers[0]


def test_batch_mapping_is_passed_as_keyword_inputs() -> None:
    model, args, kwargs = build("hf-llama")
    assert tx.memory(model, batch=kwargs).peak == tx.memory(model, **kwargs).peak


def test_bad_input_gets_a_clear_message_and_changes_nothing() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    before = _state(model)
    with pytest.raises(ValueError, match=r"unknown optimizer 'lion'.*'adamw'.*'sgd'"):
        tx.memory(model, torch.randn(2, 4), training=True, optimizer="lion")
    with pytest.raises(ValueError, match="training=True"):
        tx.memory(model, torch.randn(2, 4), optimizer="adamw")
    with pytest.raises(ValueError, match=r"failed: RuntimeError in '0'.*shapes"):
        tx.memory(model, torch.randn(2, 5), training=True)
    with pytest.raises(ValueError, match="TorchScript"):
        tx.memory(torch.jit.script(nn.Linear(4, 2)), torch.randn(2, 4))
    with pytest.raises(TypeError, match="Module"):
        tx.memory(nn.Linear, torch.randn(2, 4))  # type: ignore[arg-type]
    assert _state(model) == before
