"""The training lens on plain loops: the figures per module, steps and loss, flags, bounded
history, bad input refused with nothing attached, every hook off after close (also after an
exception or a KeyboardInterrupt in the loop), and edits between steps with the optimizer."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray.demo import images, resnet_ish
from torchxray.watch import CAPACITY, Thresholds


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
    )


def _train(
    model: nn.Module, opt: torch.optim.Optimizer, w: tx.Watch | None, steps: int, target: float = 0
) -> None:
    for _ in range(steps):
        opt.zero_grad()
        loss = (model(torch.randn(32, 4)) - target).pow(2).mean()
        loss.backward()
        opt.step()
        if w is not None:
            w.step(loss)


def _clean(model: nn.Module, opt: torch.optim.Optimizer | None = None) -> bool:
    hooks = any(
        m._forward_hooks or m._forward_pre_hooks or m._backward_hooks for m in model.modules()
    )
    opt_hooks = opt is not None and (
        opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks
    )
    return not hooks and not opt_hooks


def test_figures_per_module_as_lists_of_step_and_value() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with tx.watch(model, opt, every=3) as w:
        _train(model, opt, w, 10)
    assert w.steps == 10 and [s for s, _ in w.loss] == list(range(1, 11))
    s = w["2"]
    assert [step for step, _ in s.grad_norm] == [1, 4, 7, 10]
    assert all(v > 0 for _, v in s.grad_norm) and all(0 < v < 1 for _, v in s.update_ratio)
    assert [step for step, _ in w["1"].act_zeros] == [1, 4, 7, 10]
    assert all(0 <= v <= 1 for _, v in w["1"].act_zeros)
    assert w["1"].grad_norm == [] and w["3"].act_std  # a ReLU has no weights; a Tanh outputs
    assert w.nonfinite is None and w.closed and _clean(model, opt)


def test_steps_counted_by_step_without_an_optimizer_and_keys_named() -> None:
    model = _mlp()
    w = tx.watch(model, every=1)
    for _ in range(3):
        model.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        assert w.step(loss.item()) == w.steps
    assert w.steps == 3 and len(w["0"].grad_norm) == 3 and w["0"].update_ratio == []
    with pytest.raises(KeyError, match="did you mean '1', '0'"):
        w["01"]
    with pytest.raises(TypeError, match="one element"):
        w.step(torch.ones(3))
    w.close()
    assert _clean(model)


def test_planted_problems_flagged_too_high_lr_and_dead_relus() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)
    )
    with torch.no_grad():
        model[2].bias[1:].fill_(-100.0)  # 31 of the second ReLU's 32 units dead
    opt = torch.optim.SGD(
        [
            {"params": model[0].parameters(), "lr": 5.0},  # far too high
            {"params": [*model[2].parameters(), *model[4].parameters()], "lr": 1e-3},
        ]
    )
    with tx.watch(model, opt, every=2) as w:
        _train(model, opt, w, 6, target=10.0)
    kinds = {(f.path, f.kind) for f in w.flags}
    assert ("0", "exploding") in kinds
    assert ("3", "dead") in kinds and ("1", "dead") not in kinds
    assert "dead" in w.active["3"]


def test_an_in_place_relu_is_judged_by_its_own_output() -> None:
    # ReLU(inplace=True) returns its input tensor, changed: its output is its own, not a child's.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Linear(16, 1))
    with torch.no_grad():
        model[0].bias.fill_(-50.0)  # every unit of the ReLU dead
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=1) as w:
        for _ in range(2):
            opt.zero_grad()
            loss = model(torch.randn(16, 8)).pow(2).mean()
            loss.backward()
            opt.step()
            w.step(loss)
        assert any(f.path == "1" and f.kind == "dead" for f in w.flags), w.flags


def test_history_is_bounded_and_spans_the_run() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=1) as w:
        _train(model, opt, w, 300)
    points = w["0"].grad_norm
    assert len(points) <= CAPACITY and points[0][0] == 1
    assert points[-1][0] > 200  # thinned, not cut: the start and the end are both there
    assert w.memory_bytes < 60_000


def test_bad_input_refused_with_nothing_attached() -> None:
    with pytest.raises(ValueError, match="no parameters"):
        tx.watch(nn.ReLU())
    model = _mlp()
    other = torch.optim.SGD(_mlp().parameters(), lr=0.1)
    with pytest.raises(ValueError, match="holds none of the model's"):
        tx.watch(model, other)
    assert _clean(model, other)
    with pytest.raises(ValueError, match="positive integer"):
        tx.watch(model, every=0)
    w = tx.watch(model)
    with pytest.raises(RuntimeError, match="already watched"):
        tx.watch(model)
    with pytest.raises(RuntimeError, match="already watched"):
        tx.watch(model[0])  # a part of it
    w.close()
    tx.watch(model).close()  # free again once closed
    assert _clean(model)


def test_a_nan_loss_is_named_with_a_warning() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = tx.watch(model, opt)
    _train(model, opt, w, 2)
    opt.zero_grad()
    loss = torch.log(model(torch.randn(8, 4)).mean() * 0 - 1)  # NaN; its gradients are not
    loss.backward()
    opt.step()
    with pytest.warns(UserWarning, match="the loss is nan at step 3.*outside the model"):
        w.step(loss)
    assert w.nonfinite is not None and (w.nonfinite.phase, w.nonfinite.path) == ("loss", None)
    w.close()


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_close_removes_everything_after_an_interrupted_loop(error: type[BaseException]) -> None:
    model = resnet_ish()
    opt = torch.optim.AdamW(model.parameters())
    calls = {"n": 0}

    def boom(m: nn.Module, args: object, out: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise error("stopped")

    handle = model.layer2.register_forward_hook(boom)
    with pytest.raises(error), tx.watch(model, opt, every=1):
        for _ in range(5):
            opt.zero_grad()
            F.cross_entropy(model(images(2)), torch.tensor([1, 2])).backward()
            opt.step()
    handle.remove()
    assert _clean(model, opt)
    tx.watch(model, opt).close()  # and the model can be watched again


def test_edit_between_steps_moves_the_optimizer_state_or_is_refused() -> None:
    model = nn.Sequential(nn.Linear(4, 16), nn.LayerNorm(16), nn.Dropout(0.5), nn.Linear(16, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    log = tx.PatchLog(model)
    w = tx.watch(model, opt, every=1)
    _train(model, opt, w, 2)
    old = model[1].weight
    state = opt.state[old]["exp_avg"].clone()

    # Dropout's p: no weight moves, nothing to migrate; the hooks follow the new module.
    w.patched(lambda: log.edit("2", p=0.1), log.undo, "edit of 2")
    assert model[2].p == 0.1
    # A rebuild keeping the shapes: new tensors, the optimizer follows them with their state.
    w.patched(lambda: log.edit("1", eps=1e-3), log.undo, "edit of 1")
    assert model[1].weight is not old and model[1].eps == 1e-3
    assert any(p is model[1].weight for p in opt.param_groups[0]["params"])
    assert all(p is not old for p in opt.param_groups[0]["params"])
    assert torch.equal(opt.state[model[1].weight]["exp_avg"], state)
    # A new shape: the optimizer would keep a stale tensor: refused, undone.
    before = model[0]
    with pytest.raises(RuntimeError, match="refused while training.*0.weight"):
        w.patched(lambda: log.edit("0", out_features=8), log.undo, "edit of 0")
    assert model[0] is before
    _train(model, opt, w, 2)
    assert [s for s, _ in w["2"].act_zeros][-1] == 4  # still sampled after the edits
    w.close()
    assert _clean(model, opt)
    assert all(not m._forward_hooks for e in log.entries for m in [before])


def test_thresholds_can_be_changed() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=1, thresholds=Thresholds(exploding_update=1e-9)) as w:
        _train(model, opt, w, 1)
    assert {f.kind for f in w.flags} == {"exploding"}


def test_the_update_ratio_of_a_large_3x3_convolution_is_not_read_from_its_corners_alone() -> None:
    """A 1x1 input padded to 3x3 reaches the kernels' centres alone, so only they move: a sample
    whose stride is a multiple of 9 (147,456 values / 16,384) would read corners and say 0."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(128, 128, 3, padding=1, bias=False)
    opt = torch.optim.SGD(conv.parameters(), lr=0.1)
    before = conv.weight.detach().clone()
    with tx.watch(conv, opt, every=1) as w:
        opt.zero_grad()
        conv(torch.randn(2, 128, 1, 1)).pow(2).sum().backward()
        opt.step()
    exact = ((conv.weight.detach() - before).norm() / before.norm()).item()
    assert exact > 0
    assert w.latest("update_ratio")[""] == pytest.approx(exact, rel=0.1)
