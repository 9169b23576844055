"""What a sampled step does cheaply (issue 55) does the same as before: its hooks go straight into
the modules' tables and leave none behind, the capture's hooks stay first, a step that reads
nothing still calls the view and honours a pause, the update ratio's views are taken anew when a
weight's storage is swapped, the history grows past its first rows, and the per-metric writes
encode as the one-value writes do."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
from torch import nn

import torchxray as tx
from torchxray._watch.buffer import Series, encode, encode_all


def _mlp(width: int = 8, depth: int = 2) -> nn.Sequential:
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(4, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def _step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    model(torch.randn(16, 4)).pow(2).mean().backward()
    opt.step()


def _ours(model: nn.Module) -> int:
    tables = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs")
    return sum(len(getattr(m, t)) for m in model.modules() for t in tables)


def test_a_sampled_steps_hooks_are_in_the_tables_only_while_it_runs_and_gone_after_close() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen: list[int] = []
    probe = model[0].register_forward_hook(lambda m, a, o: seen.append(_ours(model)))
    w = tx.watch(model, opt, every=3)
    for _ in range(4):
        _step(model, opt)
    probe.remove()
    # Steps 1 and 4 are sampled: every module's hook (6 modules, 2 tables) and the model's own
    # pre-hook and hook (3 entries), besides this test's own; steps 2 and 3 run with none.
    assert seen == [16, 1, 1, 16]
    w.close()
    assert _ours(model) == 0
    assert not opt._optimizer_step_pre_hooks and not opt._optimizer_step_post_hooks


def test_the_capture_runs_before_the_users_own_hooks() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    model.register_forward_pre_hook(lambda m, a: None)
    model.register_forward_hook(lambda m, a, o: None)
    order: list[str] = []
    probe = model[0].register_forward_hook(
        lambda m, a, o: order.extend(type(h).__name__ for h in model._forward_pre_hooks.values())
    )
    with tx.watch(model, opt, every=1):
        _step(model, opt)
    probe.remove()
    assert order[0] == "PreHook" and len(order) == 2  # the watch's first, the user's kept


def test_a_step_that_reads_nothing_still_calls_the_view_and_holds_at_a_pause() -> None:
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    calls: list[int] = []
    w = tx.watch(model, opt, every=10)
    w.on_step(lambda watch: calls.append(watch.steps))
    for _ in range(25):
        _step(model, opt)
    assert calls == list(range(1, 26))  # every step's end, sampled or not
    assert [s for s, _ in w["0"].grad_norm] == [1, 11, 21]

    w.pause()
    held = threading.Event()
    w.on_step(lambda watch: held.set() if watch.paused else None)
    t = threading.Thread(target=_step, args=(model, opt))
    t.start()
    assert held.wait(10)  # step 26 (not sampled) holds at its end
    assert t.is_alive()
    w.resume()
    t.join(10)
    assert not t.is_alive() and w.steps == 26
    w.close()


def test_the_update_ratio_reads_a_swapped_storage_anew() -> None:
    model = nn.Linear(200, 200)  # 40,000 values: read through a strided sample
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 200)
    with tx.watch(model, opt, every=1) as w:
        for i in range(3):
            if i == 2:
                with torch.no_grad():
                    model.weight.data = model.weight.data.clone()  # a new storage
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            gw, gb = model.weight.grad, model.bias.grad
            assert gw is not None and gb is not None
            grad = gw.norm().item() ** 2 + gb.norm().item() ** 2
            before = math.sqrt(model.weight.norm().item() ** 2 + model.bias.norm().item() ** 2)
            opt.step()
            want = 0.1 * math.sqrt(grad) / before  # plain SGD: the update is lr * grad
            got = w[""].update_ratio[-1][1]
            assert got == pytest.approx(want, rel=0.05), (i, got, want)


def test_the_history_grows_past_its_first_rows_and_thins() -> None:
    series = Series(capacity=4)
    paths = [f"m{i}" for i in range(20)]  # more rows than the first array holds
    for step in range(1, 10):
        series.open(step)
        rows = [series.row(p) for p in paths]
        series.put_all("grad_norm", rows, [float(step * (i + 1)) for i in range(len(paths))])
        series.put(series.row("m3"), "act_mean", float(step))
    got = series.points("m19", "grad_norm")
    assert [s for s, _ in got] == [1, 5, 9]  # thinned: every fourth sample kept of nine
    assert [v for _, v in got] == pytest.approx([20.0, 100.0, 180.0], rel=1e-2)
    assert [s for s, _ in series.points("m3", "act_mean")] == [1, 5, 9]
    assert series.points("m4", "act_mean") == []  # never written: missing, not NaN


def test_writes_of_many_rows_encode_as_writes_of_one() -> None:
    values = [0.0, 1e-3, 5.0, math.inf, math.nan, -2.0, 1e30, -math.inf, 3e-8]
    for metric in ("grad_norm", "update_ratio", "act_mean", "act_std", "act_zeros"):
        many = encode_all(metric, values)
        one = np.array([encode(metric, v) for v in values])
        assert np.array_equal(many, one, equal_nan=True), metric
    # Past a few rows the write is numpy's; below, one by one: both store the same.
    for n in (3, 40):
        a, b = Series(capacity=2), Series(capacity=2)
        a.open(1), b.open(1)
        rows = [a.row(f"m{i}") for i in range(n)]
        [b.row(f"m{i}") for i in range(n)]
        vals = [float(i) / 7 for i in range(n)]
        a.put_all("act_std", rows, vals)
        for r, v in zip(rows, vals, strict=True):
            b.put(r, "act_std", v)
        assert a.points("m2", "act_std") == b.points("m2", "act_std")
        assert np.array_equal(a._all.view(np.uint16), b._all.view(np.uint16))


def test_a_swapped_weight_is_not_held_past_its_step() -> None:
    first = nn.Linear(200, 200)
    model = nn.Sequential(first, nn.ReLU(), nn.Linear(200, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=2):
        _step_wide(model, opt)  # sampled: the update ratio read the weight
        old = first.weight.data.untyped_storage()
        with torch.no_grad():
            first.weight.data = first.weight.data.clone()  # as .to(device) or .half() do
        _step_wide(model, opt)  # not sampled
        # Only this test holds the old storage: the watch let it go with its step.
        assert torch._C._storage_Use_Count(old._cdata) == 1


def test_a_weight_cut_in_place_is_read_at_its_new_size() -> None:
    first, last = nn.Linear(4, 8), nn.Linear(8, 1)
    model = nn.Sequential(first, nn.ReLU(), last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tx.watch(model, opt, every=2) as w:
        _step(model, opt)
        _step(model, opt)
        with torch.no_grad():  # the same storage, fewer values
            first.weight.data = first.weight.data[:4]
            first.bias.data = first.bias.data[:4]
            last.weight.data = last.weight.data[:, :4]
        _step(model, opt)
        want = math.sqrt(first.weight.norm().item() ** 2 + first.bias.norm().item() ** 2)
    # The norm read before the update: close to the one after, at the new size (16 + 4 values).
    assert w.latest("param_norm")["0"] == pytest.approx(want, rel=0.05)


def test_a_float64_model_is_watched() -> None:
    model = _mlp().double()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tx.watch(model, opt, every=1) as w:
        opt.zero_grad()
        model(torch.randn(16, 4, dtype=torch.float64)).pow(2).mean().backward()
        opt.step()
    assert set(w.latest("act_std")) == {"", "0", "1", "2", "3", "4"}
    assert all(math.isfinite(v) for v in w.latest("grad_norm").values())


def _step_wide(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    model(torch.randn(4, 200)).pow(2).mean().backward()
    opt.step()


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(64, 48).relu(),  # one block: the two dot products
        lambda: torch.randn(48, 64).t().relu(),  # strided: a norm and sign().abs_().sum()
        lambda: torch.randn(64, 48, dtype=torch.float64).relu(),
        lambda: torch.randn(64, 48).relu().bfloat16(),  # reduced in float32
        lambda: torch.tensor([0.0, -0.0, 3.0, float("nan"), -4.0]),  # NaN reads as NaN
    ],
    ids=["contiguous", "strided", "float64", "bfloat16", "nan"],
)
def test_the_activation_figures_are_the_same_whichever_way_they_are_read(make: object) -> None:
    from torchxray._watch.acts import act_stats

    x = make()  # type: ignore[operator]
    got = [float(t) for t in act_stats(nn.ReLU(), x)]
    ref = x.double()
    want = [float(ref.sum()), float(ref.square().sum().sqrt()), float(x.float().sign().abs().sum())]
    for g, w in zip(got, want, strict=True):
        assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=1e-5)
    assert got[2] == int(want[2])  # the non-zeros are counted exactly
