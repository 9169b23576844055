"""A NaN planted in one module's backward, at one step, is found at that step and that module in
every run: every module of three models (convolutions with BatchNorm, in-place and shared ReLUs
and residuals; a Llama-like decoder; an MLP), planted on the input side and the output side of
its forward, on sampled steps (checked as they run) and unsampled ones (found from the weights'
gradients, then replayed) when every step is checked (``check_every_step=True``). By default
only sampled steps are checked: a NaN that began between them is reported at the next sampled
step, as weights an unchecked update spoilt, never as a module that made it."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray.demo import images, llama_like, resnet_ish, tokens


class _NaNBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x.clone()  # not a view: an in-place ReLU may come next

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
        ARMED["ran"] = True
        return grad * float("nan")


ARMED = {"on": False, "ran": False}


def _plant(module: nn.Module, side: str) -> None:
    """Give ``module`` a forward whose backward turns NaN while ARMED["on"]."""
    cls = type(module)

    def forward(self: nn.Module, *args: object, **kwargs: object) -> object:
        if ARMED["on"] and side == "input" and args and isinstance(args[0], torch.Tensor):
            args = (_NaNBackward.apply(args[0]), *args[1:])
        out = cls.forward(self, *args, **kwargs)
        if ARMED["on"] and side == "output" and isinstance(out, torch.Tensor):
            out = _NaNBackward.apply(out)
        return out

    module.__class__ = type(f"Planted{cls.__name__}", (cls,), {"forward": forward})


def _mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    )


MODELS: dict[
    str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, torch.Tensor]]]
] = {
    "resnet": (
        lambda: resnet_ish(width=4),
        lambda: (images(2, size=8), torch.tensor([1, 3])),
    ),
    "llama": (
        lambda: llama_like(
            vocab=32, dim=16, layers=2, heads=2, kv_heads=1, hidden=24, device="cpu"
        ),
        lambda: (tokens(2, 5, vocab=32), tokens(2, 5, vocab=32)),
    ),
    "mlp": (_mlp, lambda: (torch.randn(4, 6), torch.tensor([0, 1, 2, 0]))),
}


def _loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_planted_nan_found_at_its_step_and_module_in_every_run(name: str) -> None:
    build, batch = MODELS[name]
    rng = random.Random(0)
    torch.manual_seed(0)
    paths = [p for p, m in build().named_modules() if p and type(m) is not nn.ModuleList]
    if name != "mlp":  # every other module (each kind is there): the suite stays fast
        paths = paths[::2]
    runs, found = 0, []
    for i, path in enumerate(paths):
        for side in ("input", "output")[i % 2 :][:1] if name != "mlp" else ("input", "output"):
            torch.manual_seed(1)
            model = build()
            target = model.get_submodule(path)
            _plant(target, side)
            ARMED["ran"] = False
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            at = rng.randint(1, 3)  # every=2 samples steps 1 and 3: step 2 replays
            with tx.watch(model, opt, every=2, check_every_step=True) as w:
                for step in range(1, at + 2):
                    ARMED["on"] = step == at
                    x, y = batch()
                    opt.zero_grad()
                    _loss(model(x), y).backward()
                    opt.step()
                    w.step()
            ARMED["on"] = False
            if not ARMED["ran"]:  # planted on the model's input, which needs no gradient
                continue
            runs += 1
            nf = w.nonfinite
            found.append((path, side, at, None if nf is None else (nf.step, nf.path)))
    wrong = [f for f in found if f[3] != (f[2], f[0])]
    assert runs >= 8 and not wrong, f"{len(wrong)} of {runs} runs: {wrong[:5]}"


def test_a_forward_nan_is_found_in_the_module_that_made_it() -> None:
    torch.manual_seed(0)
    model = resnet_ish(width=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=5, check_every_step=True) as w:
        for step in range(1, 4):
            if step == 3:
                with torch.no_grad():
                    model.layer2[0].bn1.weight[0] = float("inf")
            opt.zero_grad()
            F.cross_entropy(model(images(2, size=8)), torch.tensor([1, 3])).backward()
            opt.step()
    assert w.nonfinite is not None
    assert (w.nonfinite.step, w.nonfinite.path, w.nonfinite.phase) == (3, "layer2.0.bn1", "forward")


def _train(model: nn.Module, opt: torch.optim.Optimizer, steps: int, spoil_at: int) -> None:
    for step in range(1, steps + 1):
        if step == spoil_at:
            with torch.no_grad():
                model.layer2[0].bn1.weight[0] = float("inf")
        opt.zero_grad()
        F.cross_entropy(model(images(2, size=8)), torch.tensor([1, 3])).backward()
        opt.step()


def test_by_default_a_nan_between_sampled_steps_is_reported_at_the_next_as_spoilt_weights() -> None:
    torch.manual_seed(0)
    model = resnet_ish(width=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=5) as w:
        _train(model, opt, 5, spoil_at=3)
        assert w.nonfinite is None  # steps 2-5 are not checked
        _train(model, opt, 1, spoil_at=0)  # step 6: sampled
    nf = w.nonfinite
    assert nf is not None and (nf.step, nf.phase) == (6, "update")
    # The first module in forward order whose weights are spoilt: the inf's backward reached
    # every weight before it, so the stem's; never named as the module that began it.
    assert nf.path == "conv1"
    assert "steps 1-5, which were not checked" in nf.detail
    assert "not known" in nf.detail and "check_every_step=True" in nf.detail


@pytest.mark.parametrize("at", [2, 3])
def test_by_default_a_planted_nan_is_found_at_a_sampled_step_and_between_them_never_guessed(
    at: int,
) -> None:
    """every=2 checks steps 1 and 3: planted at 3, found there, at its module; planted at 2,
    reported at 3 as weights spoilt between the checks."""
    for path in ("0", "2", "4"):
        torch.manual_seed(1)
        model = _mlp()
        _plant(model.get_submodule(path), "output")
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with tx.watch(model, opt, every=2) as w:
            for step in range(1, 4):
                ARMED["on"] = step == at
                x, y = MODELS["mlp"][1]()
                opt.zero_grad()
                _loss(model(x), y).backward()
                opt.step()
        ARMED["on"] = False
        nf = w.nonfinite
        assert nf is not None
        if at == 3:
            assert (nf.step, nf.path, nf.phase) == (3, path, "backward")
        else:
            assert (nf.step, nf.phase) == (3, "update") and "steps 1-2" in nf.detail


def test_by_default_a_nan_loss_at_an_unchecked_step_says_so() -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=10) as w, pytest.warns(UserWarning, match="loss is nan"):
        for step in range(1, 4):
            opt.zero_grad()
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            w.step(loss if step < 3 else torch.tensor(float("nan")))
    nf = w.nonfinite
    assert nf is not None and (nf.step, nf.path, nf.phase) == (3, None, "loss")
    assert "not checked" in nf.detail and "loss function made it" not in nf.detail
