"""What one watched step costs, phase by phase (``python -m bench.watch_step``; issue 55).

Two copies of the small MLP of ``bench.watch`` (784 -> W -> W -> 10, ReLUs, SGD with momentum),
one bare and one watched by ``tx.watch(model, opt, every=10)``, stepped in turn (bare, watched,
bare, ...), so that both meet the same caches. Each step's forward (with the loss), backward and
``optimizer.step()`` are timed with the thread's CPU time (steadier than wall time on a shared
machine); the table gives the medians of the watched steps over the bare ones, for the sampled
steps and the others, and the ratio a loop at ``every=10`` pays by these medians.

``--floor`` times, in the same way, what a sampled step cannot do without: the same reductions
written as plainly as they can be (a forward hook per module doing the activation figures' three
reductions, the gradient norms read once, the update ratio's copy, subtraction and norms, one
read at the end), with no history, no flags and no capture for a replay. It is not the lens, only
the cost of its arithmetic on this model: what the lens costs above it is its own bookkeeping.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

import torchxray as tx
from torchxray._watch.update import spread

from .watch import mlp

Phases = tuple[int, int, int]  # forward with the loss, backward, optimizer step (ns)


def _timed(model: nn.Module, opt: torch.optim.Optimizer, loss_of: Callable[..., Any]) -> Phases:
    clock = time.thread_time_ns
    t0 = clock()
    opt.zero_grad()
    loss = loss_of(model)
    t1 = clock()
    loss.backward()
    t2 = clock()
    opt.step()
    return t1 - t0, t2 - t1, clock() - t2


class _Floor:
    """The sampled step's reductions alone, as plainly as they can be written (``--floor``)."""

    def __init__(self, model: nn.Module, opt: torch.optim.Optimizer) -> None:
        self.model, self.params = model, [p for p in model.parameters()]
        self.views = [spread(p)[0] for p in self.params]
        self.modules = list(model.modules())
        self.acts: list[torch.Tensor] = []
        self.on = False
        self.step = 0
        self.before: list[torch.Tensor] = []
        self.norms: list[torch.Tensor] = []
        opt.register_step_pre_hook(self.pre)
        opt.register_step_post_hook(self.post)

    def hook(self, m: nn.Module, args: Any, kwargs: Any, out: torch.Tensor) -> None:
        x = out.detach()
        self.acts += [x.sum(), torch.linalg.vector_norm(x), x.sign().abs_().sum()]

    def begin(self) -> None:
        self.on = self.step % 10 == 0
        if self.on:
            for m in self.modules:
                m._forward_hooks[-1] = self.hook
                m._forward_hooks_with_kwargs[-1] = True

    def pre(self, *_: Any) -> None:
        if self.on:
            torch.stack(torch._foreach_norm([p.grad for p in self.params])).tolist()  # type: ignore[misc]
            self.before = list(torch._foreach_mul(self.views, 1.0))
            self.norms = list(torch._foreach_norm(self.before))

    def post(self, *_: Any) -> None:
        self.step += 1
        if not self.on:
            return
        torch._foreach_sub_(self.before, self.views)
        deltas = torch._foreach_norm(self.before)
        torch.stack([*self.norms, *deltas, *self.acts]).tolist()
        self.acts.clear()
        for m in self.modules:
            m._forward_hooks.pop(-1, None)
            m._forward_hooks_with_kwargs.pop(-1, None)


def run(width: int, batch: int, steps: int, floor: bool) -> dict[str, Any]:
    (bare, loss_of), (watched, _) = mlp(width, batch), mlp(width, batch)
    watched.load_state_dict(bare.state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9) for m in (bare, watched)]
    if floor:
        plain = _Floor(watched, opts[1])
        sampled, begin = (lambda: plain.on), plain.begin
    else:
        w = tx.watch(watched, opts[1], every=10)
        sampled, begin = (lambda: w._rec.sampled(w._rec.done)), (lambda: None)
    runs: dict[str, list[Phases]] = {"bare": [], "sampled": [], "not sampled": []}
    for i in range(steps + 200):
        b = _timed(bare, opts[0], loss_of)
        begin()
        t = _timed(watched, opts[1], loss_of)
        if i >= 200:  # the first steps warm up
            runs["bare"].append(b)
            runs["sampled" if sampled() else "not sampled"].append(t)
    if not floor:
        w.close()
    med = {k: [statistics.median(c) for c in zip(*v, strict=True)] for k, v in runs.items()}
    whole = {k: statistics.median(sum(p) for p in v) for k, v in runs.items()}
    ratio = (whole["sampled"] + 9 * whole["not sampled"]) / (10 * whole["bare"])
    return {"phases": med, "whole": whole, "ratio": ratio}


def table(name: str, got: dict[str, Any]) -> str:
    b = got["whole"]["bare"]
    out = [
        f"{name}: bare step {b / 1e3:.0f} us; at every=10 {got['ratio']:.3f}x (medians)",
        "| step | forward | backward | optimizer.step | whole |",
        "|---|---:|---:|---:|---:|",
    ]
    bare = got["phases"]["bare"]
    for kind in ("sampled", "not sampled"):
        ph = got["phases"][kind]
        cells = [f"{(v - v0) / 1e3:+.0f} us" for v, v0 in zip(ph, bare, strict=True)]
        out.append(f"| {kind} | {' | '.join(cells)} | {(got['whole'][kind] - b) / 1e3:+.0f} us |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.watch_step", description=__doc__.splitlines()[0]
    )
    p.add_argument("--mlp", default="256x128", help="WIDTHxBATCH (784-W-W-10)")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--floor", action="store_true", help="the reductions alone (see above)")
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    width, batch = (int(v) for v in a.mlp.split("x"))
    name = f"MLP 784-{width}-{width}-10, batch {batch}" + (
        ", the reductions alone" if a.floor else ""
    )
    print(table(name, run(width, batch, a.steps, a.floor)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
