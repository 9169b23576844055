"""`tx.memory(..., mode="real")`: the step run for real and measured with the CUDA
allocator, compared with the fake estimate; the model left exactly as it was.

The CUDA tests skip without a GPU. The CPU tests always run: the refusals, and the whole real
path with the allocator replaced by a stand-in meter (`_memory.real.CudaMeter`), which checks
every field but the allocator's own readings: gradients, optimizer state and saved activations
from the real tensors against the fake estimate, the span arithmetic of per-module peaks, and
that nothing of the model changes, errors included.
"""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch
from fixtures.real import build
from torch import nn
from torch.nn.modules import module as module_globals

import torchxray as tx
from torchxray._memory import real

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
FIELDS = ("params", "buffers", "grads", "optimizer")


def _mlp(width: int = 64) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(width, 2 * width),
        nn.BatchNorm1d(2 * width),
        nn.ReLU(),
        nn.Dropout(0.1),
        nn.Linear(2 * width, 10),
    ).eval()


def _state(model: nn.Module) -> tuple[Any, ...]:
    """Everything a call could change, by identity where it matters, by value for the weights."""
    return (
        [(n, id(t), t.device, t.dtype, t.requires_grad) for n, t in model.named_parameters()],
        [(n, id(t)) for n, t in model.named_buffers()],
        [m.training for m in model.modules()],
        [id(p.grad) if p.grad is not None else None for p in model.parameters()],
        [sorted(vars(m)) for m in model.modules()],
        [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()],
        len(module_globals._global_forward_hooks),
        len(module_globals._global_forward_pre_hooks),
    )


def _values(model: nn.Module) -> dict[str, torch.Tensor]:
    out = {k: v.detach().clone() for k, v in model.state_dict().items()}
    out.update(
        {f"{n}.grad": p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    )
    return out


def _same_values(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


class Meter:
    """The allocator's counters, kept by hand: `alloc`/`free` move them, readings as CudaMeter's."""

    def __init__(self, device: Any = None, start: int = 0) -> None:
        self.current = self.peak = start
        self.resets = 0

    def alloc(self, n: int) -> None:
        self.current += n
        self.peak = max(self.peak, self.current)

    def free(self, n: int) -> None:
        self.current -= n

    def read(self) -> tuple[int, int]:
        return self.current, self.peak

    def reset(self) -> None:
        self.peak = self.current
        self.resets += 1

    def warm(self, dtypes: set[torch.dtype]) -> None:
        pass

    def release(self) -> None:
        pass


@pytest.fixture
def on_cpu(monkeypatch: pytest.MonkeyPatch) -> Meter:
    """Real mode on the CPU, the allocator replaced by a `Meter` (5000 bytes held elsewhere)."""
    meter = Meter(start=5000)
    monkeypatch.setattr(real, "CudaMeter", lambda device: meter)
    monkeypatch.setattr(real, "cuda_device", lambda tensors: torch.device("cpu"))
    return meter


# -- refusals (always run) ------------------------------------------------------------------------


def test_a_cpu_model_is_refused_with_a_clear_message_and_left_as_it_was() -> None:
    model, x = _mlp(), torch.randn(8, 64)
    before, values = _state(model), _values(model)
    with pytest.raises(ValueError) as err:
        tx.memory(model, x, mode="real", training=True, optimizer="adamw")
    assert str(err.value) == (
        "mode='real' measures with the CUDA allocator; this model is on cpu: "
        "use the default fake mode"
    )
    assert _state(model) == before and _same_values(_values(model), values)


def test_meta_and_empty_models_are_refused() -> None:
    with torch.device("meta"):
        model = nn.Linear(4, 4)
    with pytest.raises(ValueError, match=r"this model is on meta: use the default fake mode"):
        tx.memory(model, torch.empty(2, 4, device="meta"), mode="real")
    with pytest.raises(ValueError, match="has no parameters or buffers"):
        tx.memory(nn.ReLU(), torch.randn(2, 4), mode="real")


def test_a_model_spread_over_devices_is_refused() -> None:
    tensors = [torch.empty(1, device="meta"), torch.empty(1)]
    with pytest.raises(ValueError, match=r"is on cpu, meta: use the default fake mode"):
        real.cuda_device(tensors)


@pytest.mark.parametrize("mode", ["REAL", "cuda", "", None, 1])
def test_a_bad_mode_name_is_refused(mode: Any) -> None:
    model = _mlp()
    with pytest.raises(ValueError, match=r"use 'fake' \(the default.*or 'real'"):
        tx.memory(model, torch.randn(8, 64), mode=mode)


def test_a_forward_argument_named_mode_comes_through_batch() -> None:
    class Moded(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, mode: str = "a") -> torch.Tensor:
            return self.lin(x) if mode == "b" else self.lin(x).relu()

    rep = tx.memory(Moded(), torch.randn(2, 4), batch={"mode": "b"})
    assert rep.mode == "fake" and rep.params == 4 * 20


def test_a_bad_optimizer_is_refused_before_anything_runs(on_cpu: Meter) -> None:
    model = _mlp()
    before = _state(model)
    with pytest.raises(ValueError, match="unknown optimizer 'adamx'"):
        tx.memory(model, torch.randn(8, 64), training=True, optimizer="adamx", mode="real")
    assert on_cpu.resets == 0 and _state(model) == before


# -- the real path on the CPU, the allocator replaced (always run) ----------------------------------


@pytest.mark.parametrize("optimizer", ["adamw", "sgd", "rmsprop", "adagrad", "instance", None])
def test_weights_grads_and_optimizer_state_equal_the_fake_estimate(
    on_cpu: Meter, optimizer: str | None
) -> None:
    model, x = _mlp(), torch.randn(8, 64)
    opt: Any = optimizer
    if optimizer == "instance":
        opt = torch.optim.Adam(model.parameters(), amsgrad=True)  # three state tensors each
    rep = tx.memory(model, x, training=True, optimizer=opt, mode="real")
    fake = tx.memory(model, x, training=True, optimizer=opt)
    assert rep.mode == "real" and fake.mode == "fake" and rep.training
    for path in ("", "0", "1", "4"):
        for f in FIELDS:
            assert getattr(rep[path], f) == getattr(fake[path], f), (path, f)
    assert rep.grads == rep.params
    if optimizer == "instance":
        assert rep.optimizer == 3 * rep.params and not opt.state  # the user's optimizer untouched
    if optimizer is None:
        assert rep.optimizer == 0


@pytest.mark.parametrize("name", ["hf-gpt2", "hf-llama", "timm-resnet18"])
def test_real_activations_match_the_fake_estimate(on_cpu: Meter, name: str) -> None:
    model, args, kwargs = build(name)
    rep = tx.memory(model, *args, training=True, optimizer="adamw", mode="real", **kwargs)
    fake = tx.memory(model, *args, training=True, optimizer="adamw", **kwargs)
    for f in FIELDS:
        assert getattr(rep, f) == getattr(fake, f), f
    assert rep.activations > 0
    assert abs(rep.activations - fake.activations) <= 0.1 * fake.activations
    charged = [r.path for r in rep if r.activations_own]
    assert charged and "" not in charged  # charged to the modules whose forward saved them


def test_a_forward_saves_nothing_and_has_no_grads(on_cpu: Meter) -> None:
    model, x = _mlp(), torch.randn(8, 64)
    rep = tx.memory(model, x, mode="real")
    assert (rep.grads, rep.optimizer, rep.activations) == (0, 0, 0)
    assert rep.summary().startswith("forward measured on cpu")


class Spike(nn.Module):
    """Moves the stand-in meter as a real forward moves the allocator: 1000 bytes for a while."""

    def __init__(self, meter: Meter, n: int) -> None:
        super().__init__()
        self.meter, self.n = meter, n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.meter.alloc(self.n)
        self.meter.free(self.n)
        return x


def test_peaks_are_the_allocator_readings_over_what_the_run_starts_from(on_cpu: Meter) -> None:
    torch.manual_seed(0)
    lin = nn.Linear(16, 16)
    model = nn.Sequential(
        nn.Sequential(lin, Spike(on_cpu, 1000)), nn.Sequential(Spike(on_cpu, 300))
    )
    x = torch.randn(4, 16)
    held = (16 * 16 + 16) * 4 + x.numel() * 4  # weights and the input, as the fake run starts
    rep = tx.memory(model, x, mode="real")
    assert rep["0.1"].peak == rep["0"].peak == rep[""].peak == held + 1000
    assert rep["1"].peak == rep["1.0"].peak == held + 300
    assert rep["0.0"].peak == held  # the stand-in moved for no op of its own
    assert rep.peak == held + 1000  # the 5000 bytes held elsewhere do not count
    trained = tx.memory(model, x, training=True, optimizer="adamw", mode="real")
    assert trained.peak == held + 1000 + trained.optimizer


def test_the_model_is_left_exactly_as_it_was(on_cpu: Meter) -> None:
    model, x = _mlp(), torch.randn(8, 64)
    model[0].weight.grad = torch.full_like(model[0].weight, 0.5)  # a gradient the user had
    model[1].weight.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters())
    before, values = _state(model), _values(model)
    rng = torch.get_rng_state()
    rep = tx.memory(model, x, training=True, optimizer=opt, mode="real")
    assert rep.grads == rep.params - model[1].weight.numel() * 4  # the frozen one has none
    assert _state(model) == before and _same_values(_values(model), values)
    assert model[4].weight.grad is None and not opt.state  # None stays None; optimizer as it was
    assert torch.equal(torch.get_rng_state(), rng)  # dropout ran, the generator is put back


class Broken(torch.optim.SGD):
    def step(self, closure: Any = None) -> Any:
        raise RuntimeError("no step today")


def test_an_optimizer_whose_step_fails_gets_a_clear_message(on_cpu: Meter) -> None:
    model, x = _mlp(), torch.randn(8, 64)
    opt = Broken(model.parameters(), lr=0.1)
    before, values = _state(model), _values(model)
    with pytest.raises(ValueError, match="a step of Broken on copies .* RuntimeError: no step"):
        tx.memory(model, x, training=True, optimizer=opt, mode="real")
    assert _state(model) == before and _same_values(_values(model), values)


class Failing(nn.Module):
    """Updates BatchNorm statistics, caches a tensor on itself, then fails in its last layer."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.cache = x * 2
        self.bn.register_buffer("extra", torch.ones(1))
        return self.lin(self.bn(x)).view(-1, 3)


def test_an_error_gets_a_clear_message_and_changes_nothing(on_cpu: Meter) -> None:
    model, x = Failing(), torch.randn(4, 8)
    before, values = _state(model), _values(model)
    with pytest.raises(ValueError, match=r"the real forward failed: RuntimeError in 'the model'"):
        tx.memory(model, x, training=True, optimizer="adamw", mode="real")
    assert _state(model) == before and _same_values(_values(model), values)
    assert "cache" not in vars(model) and "extra" not in model.bn._buffers


# -- CUDA: the allocator itself (skip without a GPU) -----------------------------------------------


def _settle() -> int:
    gc.collect()
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def _within(a: int, b: int, tol: float = 0.1) -> bool:
    return abs(a - b) <= tol * max(a, b)


def _compare(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    for training in (False, True):
        opt = "adamw" if training else None
        rep = tx.memory(model, *args, training=training, optimizer=opt, mode="real", **kwargs)
        fake = tx.memory(model, *args, training=training, optimizer=opt, **kwargs)
        assert rep.mode == "real" and rep.device == fake.device
        for f in FIELDS:
            assert getattr(rep, f) == getattr(fake, f), (training, f)
        assert _within(rep.activations, fake.activations), (rep.activations, fake.activations)
        assert _within(rep.peak, fake.peak), (training, rep.peak, fake.peak)


@cuda
@pytest.mark.cuda
def test_cuda_mlp_real_equals_fake() -> None:
    torch.manual_seed(0)
    # Activations well above the weights, so the peak is mostly what the run makes.
    model = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.GELU())])
    _compare(model.cuda(), (torch.randn(512, 1024, device="cuda"),), {})


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize("name", ["timm-resnet18", "hf-gpt2", "hf-llama"])
def test_cuda_real_models_real_equals_fake(name: str) -> None:
    model, args, kwargs = build(name)
    _compare(model.cuda(), args, kwargs)  # the inputs stay on the CPU: moved for the run


@cuda
@pytest.mark.cuda
def test_cuda_model_left_as_it_was_and_memory_given_back() -> None:
    model = _mlp(256).cuda()
    x = torch.randn(64, 256, device="cuda")
    model[0].weight.grad = torch.full_like(model[0].weight, 0.5)
    tx.memory(model, x, training=True, optimizer="adamw", mode="real")  # cuBLAS workspaces made
    before, values = _state(model), _values(model)
    rng = torch.cuda.get_rng_state()
    allocated = _settle()
    rep = tx.memory(model, x, training=True, optimizer="adamw", mode="real")
    assert _settle() == allocated
    assert _state(model) == before and _same_values(_values(model), values)
    assert torch.equal(torch.cuda.get_rng_state(), rng)
    assert rep.peak >= rep.params + rep.buffers + rep.grads + rep.optimizer
    assert rep["0"].peak > 0 and rep["4"].peak > 0 and rep.fits("cuda:0")


@cuda
@pytest.mark.cuda
def test_cuda_out_of_memory_is_a_clear_error_and_changes_nothing() -> None:
    model = nn.Linear(1024, 1024).cuda()
    tx.memory(model, torch.randn(2, 1024, device="cuda"), mode="real")  # cuBLAS workspaces made
    room = torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved()
    rows = room // (1024 * 4) + 1024  # an input whose output cannot fit
    x = torch.zeros(1, 1024, device="cuda").expand(rows, 1024)  # the input itself: 4 KiB
    before, allocated = _state(model), _settle()
    with pytest.raises(ValueError, match="OutOfMemoryError"):
        tx.memory(model, x, mode="real")
    assert _state(model) == before and _settle() == allocated
