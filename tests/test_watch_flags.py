"""The training lens's flags on small real loops (issue 43, items 6 and 7): a planted problem is
one record, counted each time it comes back, and does not flicker (hysteresis); the magnitude
flag names the layer whose outputs blew up, not every layer after it."""

from __future__ import annotations

import torch
from torch import nn

import torchxray as tx
from torchxray.watch import Thresholds


def _net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1)
    )


def _vanishing_at(step: int) -> bool:
    """The plant: layer 2's gradients ~0 from step 10 to 39 (but for one healthy step in four,
    a norm that flickers), healthy from 40 to 49, ~0 again from 50."""
    if 10 <= step < 40:
        return step % 4 != 0
    return step >= 50


def _flickering_run(thresholds: Thresholds) -> tx.Watch:
    model = _net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = tx.watch(model, opt, every=1, thresholds=thresholds)
    for p in model[2].parameters():
        p.register_hook(lambda g: g * 1e-9 if _vanishing_at(w.steps + 1) else g)
    gen = torch.Generator().manual_seed(0)
    for _ in range(60):
        x = torch.randn(32, 8, generator=gen)
        opt.zero_grad()
        loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
        loss.backward()
        opt.step()
        w.step(loss)
    w.close()
    return w


def test_a_flickering_problem_is_one_record_counted_when_it_comes_back() -> None:
    w = _flickering_run(Thresholds())
    vanishing = [f for f in w.flags if f.kind == "vanishing"]
    assert [(f.path, f.step, f.count, f.last) for f in vanishing] == [("2", 10, 2, 50)]
    # Without hysteresis (clear at once, no margin) the flicker raises it again and again; the
    # record still stays one, its count says how often.
    edge = _flickering_run(Thresholds(clear_after=1, margin=1.0))
    again = [f for f in edge.flags if f.kind == "vanishing"]
    assert len(again) == 1 and again[0].count == 9 and again[0].last == 50


def test_a_held_flag_clears_only_past_the_margin() -> None:
    from torchxray._watch.flags import kinds_of

    t = Thresholds()
    near = {"grad_norm": 1.5e-6, "param_norm": 1.0}  # above the threshold, within the margin
    assert kinds_of(near, t) == set()
    assert kinds_of(near, t, held={"vanishing"}) == {"vanishing"}
    dead = {"act_zeros": 0.92, "own_output": 1.0}
    assert kinds_of(dead, t) == set() and kinds_of(dead, t, held={"dead"}) == {"dead"}


def test_activations_that_blow_up_are_flagged_at_the_layer_that_grew() -> None:
    model = _net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(0)
    with tx.watch(model, opt, every=2) as w:
        for step in range(1, 61):
            if 20 < step <= 50:  # the plant: layer 2's weights grow 1.25x a step (808x in all)
                with torch.no_grad():
                    model[2].weight.mul_(1.25)
            x = torch.randn(32, 8, generator=gen)
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            w.step(loss)
    magnitude = [f for f in w.flags if f.kind == "magnitude"]
    assert [(f.path, f.count) for f in magnitude] == [("2", 1)]
    assert 40 <= magnitude[0].step <= 46  # 1.25 ** 24 is 211
    assert "magnitude" in w.active["2"] and w.latest("act_growth")["2"] > 200
    # The ReLU and the Linear after it grew as much: what reached them, not theirs.
    assert w.latest("act_growth")["4"] > 100 and "4" not in w.active
    assert w.nonfinite is None
