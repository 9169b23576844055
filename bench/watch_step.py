"""What one watched step costs, phase by phase (``python -m bench.watch_step``; issue 55).

Two copies of the small MLP of ``bench.watch`` (784 -> W -> W -> 10, ReLUs, SGD with momentum),
one bare and one watched by ``tx.watch(model, opt, every=10)``, stepped in turn (bare, watched,
bare, ...), so that both meet the same caches. Each step's forward (with the loss), backward and
``optimizer.step()`` are timed with the thread's CPU time (steadier than wall time on a shared
machine); the table gives the medians of the watched steps over the bare ones, for the sampled
steps and the others, and the ratio a loop at ``every=10`` pays: by these medians, and by blocks
of 100 steps (each block's CPU time over the bare copy's in the same steps; the median block),
which count every step a median leaves out.

``--against SRC`` adds a third copy watched by another tree's ``torchxray`` (``SRC``: its
``src`` folder, e.g. a worktree of an older commit), imported under another name and stepped in
the same process in turn with the other two: an A/B that meets the same caches and the same
noise (an A/A run of one tree against itself differs by about 0.003x here).

``--parts`` times each part of a sampled step inside the step (the recorder's and the hooks'
entry points wrapped on one watch): what the step's own caches make of each, which a loop
over one part alone does not show.

``--floor`` times, in the same way, what a sampled step cannot do without: the same reductions
written as plainly as they can be (a forward hook per module doing the activation figures' three
reductions, the gradient norms read once, the update ratio's copy, subtraction and norms, one
read at the end), with no history, no flags and no capture for a replay. It is not the lens, only
the cost of its arithmetic on this model: what the lens costs above it is its own bookkeeping.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
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


# What ``--parts`` times inside a sampled step: the recorder's and the hooks' entry points (each
# wrapped on the one watch, its CPU time summed over the step). Nested: ``act_stats`` is inside
# the forward hook, ``take`` (the update ratio's copy) inside ``backward_done``.
_PARTS = {
    "forward hooks (every module)": ("hook", "fn"),
    "  of which act_stats": ("module", "act_stats"),
    "capture, before the forward": ("root_pre", "fn"),
    "capture, after the forward": ("root_post", "fn"),
    "backward_done (gradient norms, the copy)": ("rec", "backward_done"),
    "  of which the update ratio's copy (take)": ("weighing", "take"),
    "updated (the update's norms)": ("rec", "updated"),
    "end: reading the figures (_read)": ("rec", "_read"),
    "end: storing and judging (Samples.add)": ("samples", "add"),
    "hooks on and off": ("hooks", "each"),
    "capture on and off": ("hooks", "capture"),
}


def parts(width: int, batch: int, steps: int) -> list[tuple[str, float]]:
    """Each part of a sampled step (``_PARTS``), timed inside the step: medians over the
    sampled steps of CPU microseconds, with the sampled step over the bare one first."""
    import torchxray._watch.record as record
    from torchxray._watch import update

    (bare, loss_of), (model, _) = mlp(width, batch), mlp(width, batch)
    model.load_state_dict(bare.state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9) for m in (bare, model)]
    w = tx.watch(model, opts[1], every=10)
    rec, clock = w._rec, time.thread_time_ns  # type: ignore[attr-defined]
    spent: dict[str, int] = {}
    pre, post = w._hooks._root  # type: ignore[attr-defined]
    on = {
        "hook": w._hooks._hook,  # type: ignore[attr-defined]
        "root_pre": pre,
        "root_post": post,
        "rec": rec,
        "samples": rec.samples,
        "hooks": w._hooks,  # type: ignore[attr-defined]
        "module": record,
        "weighing": update.Weighing,
    }
    undo = []
    for label, (where, name) in _PARTS.items():
        obj = on[where]
        fn = getattr(obj, name)

        def timed(*a: Any, _fn: Any = fn, _label: str = label, **k: Any) -> Any:
            t = clock()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] = spent.get(_label, 0) + clock() - t

        setattr(obj, name, timed)
        undo.append((obj, name, fn))
    got: dict[str, list[int]] = {}
    try:
        for step in range(steps + 200):
            t_bare = sum(_timed(bare, opts[0], loss_of))
            spent.clear()
            sampled = rec.sampled(rec.step)
            t = sum(_timed(model, opts[1], loss_of))
            if step >= 200 and sampled:
                got.setdefault("the sampled step over the bare one", []).append(t - t_bare)
                for k, v in spent.items():
                    got.setdefault(k, []).append(v)
    finally:
        for obj, name, fn in undo:
            setattr(obj, name, fn)
        w.close()
    order = ["the sampled step over the bare one", *_PARTS]
    return [(k, statistics.median(got[k]) / 1e3) for k in order if k in got]


def _against(src: str) -> Any:
    """Another tree's ``torchxray`` (``src``: its ``src`` folder), imported beside this one as
    ``torchxray_against``: a copy in a temporary folder (the package imports itself relatively
    only), so that both run in one process, in turn, on the same caches and the same noise."""
    root = Path(tempfile.mkdtemp(prefix="watch-step-"))
    shutil.copytree(Path(src) / "torchxray", root / "torchxray_against")
    sys.path.insert(0, str(root))
    return importlib.import_module("torchxray_against")


def _was_sampled(w: Any) -> bool:
    """Whether the step just done was sampled."""
    return bool(w._rec.sampled(w._rec.done))


def run(
    width: int, batch: int, steps: int, floor: bool, against: str | None = None
) -> dict[str, Any]:
    """Step a bare copy and each watched side in turn (``this``; with ``against``, another
    tree's watch too): medians of each phase, and the ratio a loop at ``every=10`` pays by
    them and by blocks (CPU time summed over 100 steps, 10 of them sampled, over the bare
    copy's in the same steps: the steps a median leaves out are counted there)."""
    names = ["bare", "this"] + (["against"] if against else [])
    made = [mlp(width, batch) for _ in names]
    loss_of = made[0][1]
    for m, _ in made[1:]:
        m.load_state_dict(made[0][0].state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9) for m, _ in made]
    begins: list[Callable[[], None]] = [lambda: None] * len(names)
    sampled: list[Callable[[], bool]] = []
    watches = []
    for i, name in enumerate(names[1:], 1):
        if floor and name == "this":
            plain = _Floor(made[i][0], opts[i])
            sampled.append(functools.partial(getattr, plain, "on"))
            begins[i] = plain.begin
        else:
            lens = tx if name == "this" else _against(against or "")
            w = lens.watch(made[i][0], opts[i], every=10)
            watches.append(w)
            sampled.append(functools.partial(_was_sampled, w))
    runs: dict[str, list[Phases]] = {n: [] for n in names}
    kinds: list[bool] = []  # whether each step was sampled (the same on every side)
    for step in range(steps + 200):
        for i, name in enumerate(names):
            begins[i]()
            t = _timed(made[i][0], opts[i], loss_of)
            if step >= 200:  # the first steps warm up
                runs[name].append(t)
        if step >= 200:
            kinds.append(sampled[0]())
    for w in watches:
        w.close()
    bare = runs["bare"]
    out: dict[str, Any] = {"bare": [statistics.median(c) for c in zip(*bare, strict=True)]}
    for name in names[1:]:
        got = runs[name]
        med = {
            kind: [statistics.median(c) for c in zip(*picked, strict=True)]
            for kind, picked in (
                ("sampled", [t for t, k in zip(got, kinds, strict=True) if k]),
                ("not sampled", [t for t, k in zip(got, kinds, strict=True) if not k]),
            )
        }
        whole = {k: sum(v) for k, v in med.items()}
        b = sum(out["bare"])
        ratio = (whole["sampled"] + 9 * whole["not sampled"]) / (10 * b)
        blocks = [
            sum(map(sum, got[j : j + 100])) / sum(map(sum, bare[j : j + 100]))
            for j in range(0, len(got) - 99, 100)
        ]
        out[name] = {"phases": med, "whole": whole, "ratio": ratio}
        out[name]["blocks"] = statistics.median(blocks)
    return out


def table(name: str, got: dict[str, Any]) -> str:
    bare = got["bare"]
    b = sum(bare)
    out = [f"{name}: bare step {b / 1e3:.0f} us", "| side | step | forward | backward | "
           "optimizer.step | whole | every=10 (medians) | every=10 (blocks) |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for side in (k for k in got if k != "bare"):
        r = got[side]
        for kind in ("sampled", "not sampled"):
            ph = r["phases"][kind]
            cells = [f"{(v - v0) / 1e3:+.0f} us" for v, v0 in zip(ph, bare, strict=True)]
            ratios = f"{r['ratio']:.3f}x | {r['blocks']:.3f}x" if kind == "sampled" else "|"
            out.append(
                f"| {side} | {kind} | {' | '.join(cells)} | {(r['whole'][kind] - b) / 1e3:+.0f} us"
                f" | {ratios} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.watch_step", description=__doc__.splitlines()[0]
    )
    p.add_argument("--mlp", default="256x128", help="WIDTHxBATCH (784-W-W-10)")
    p.add_argument("--steps", type=int, default=6000)
    p.add_argument("--floor", action="store_true", help="the reductions alone (see above)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--against",
        metavar="SRC",
        help="another tree's src folder: its watch stepped in the same process, in turn",
    )
    p.add_argument("--parts", action="store_true", help="each part of a sampled step, inside it")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    width, batch = (int(v) for v in a.mlp.split("x"))
    if a.parts:
        print("| part of a sampled step | CPU, median |\n|---|---:|")
        for label, us in parts(width, batch, a.steps):
            print(f"| {label} | {us:.0f} us |")
        return 0
    name = f"MLP 784-{width}-{width}-10, batch {batch}" + (
        ", the reductions alone" if a.floor else ""
    )
    print(table(name, run(width, batch, a.steps, a.floor, a.against)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
