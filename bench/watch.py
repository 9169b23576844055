"""The training lens's goals, measured (``python -m bench.watch``; docs/benchmarks.md "Training lens").

- overhead: a training step with ``tx.watch(model, opt, every=10)`` and ``every=1`` against the
  bare step, on a timm ResNet-50 and a small transformers Llama on the CPU. Single steps are timed
  interleaved (bare, a sampled step, an unsampled one, bare, ...; ``overhead``), and the figures are
  ratios of their medians. Attaching and closing the watch are outside the timing.
- buffer: ``w.memory_bytes`` after 1,000 sampled steps of a 1,000-module model (``every=1``).
- small MLP loop (issue 55, ``--only mlp``): blocks of ``BLOCK`` steps of a plain loop on a copy
  watched by ``tx.watch(model, opt, every=10)`` for the whole run (two sampled steps a block,
  eighteen not) against blocks of the same loop on a bare copy, interleaved (bare, watched, bare,
  ...), each watched block against the mean of the bare blocks either side, median over the
  rounds; and the same for a copy watched with ``check_every_step=True`` (every step's
  gradients checked for NaN/Inf: one ``_foreach_norm``, one number read, and the replay's
  capture).
- the planted NaN (found at its step and module in every run) is a test:
  ``tests/test_watch_nonfinite.py``.

One intra-op thread (``--threads``): on a machine shared with other work, two threads wait for a
busy core at every op and a bare step varies several-fold between runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

import torchxray as tx
from torchxray.demo import many_modules

GOALS = {"every 10": 1.03, "every 1": 1.25}
MLP_GOAL = 1.03
BLOCK = 20  # steps a block of the MLP loop
BUFFER_GOAL = 1_000_000  # bytes per 1,000 modules at 1,000 samples


def resnet50(batch: int, size: int) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    import timm

    torch.manual_seed(0)
    model = timm.create_model("resnet50", pretrained=False, num_classes=100)
    x, y = torch.randn(batch, 3, size, size), torch.randint(0, 100, (batch,))
    return model, lambda m: F.cross_entropy(m(x), y)


def llama(batch: int, tokens: int) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=8000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=tokens,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(cfg)
    ids = torch.randint(0, 8000, (batch, tokens))
    return model, lambda m: m(input_ids=ids, labels=ids).loss


def overhead(name: str, build: Callable[[], Any], rounds: int) -> dict[str, Any]:
    """Steps timed one by one, interleaved: bare, a watch's sampled step (its first), the same
    watch's next (unsampled) step, bare again. A step at ``every=10`` costs one sampled and nine
    unsampled steps per ten; at ``every=1`` every step is a sampled one."""
    model, loss_of = build()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step(w: Any) -> float:
        t = time.perf_counter()
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        opt.step()
        if w is not None:
            w.step(loss)
        return time.perf_counter() - t

    step(None)  # warm-up: allocator, first-call paths
    times: dict[str, list[float]] = {"bare": [], "sampled": [], "unsampled": []}
    for r in range(rounds):
        times["bare"].append(step(None))
        w = tx.watch(model, opt, every=10)
        times["sampled"].append(step(w))
        times["unsampled"].append(step(w))
        w.close()
        times["bare"].append(step(None))
        last = ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items())
        print(f"  {name} round {r + 1}/{rounds}: {last}", file=sys.stderr)
    bare, on, off = (statistics.median(times[k]) for k in ("bare", "sampled", "unsampled"))
    return {
        "model": name,
        "modules": sum(1 for _ in model.modules()),
        "step_s": bare,
        "ratios": {"every 10": (on + 9 * off) / (10 * bare), "every 1": on / bare},
        "medians": {"bare": bare, "sampled": on, "unsampled": off},
        "runs": times,
    }


def buffer_bytes(modules: int = 1000, samples: int = 1000) -> dict[str, Any]:
    model = many_modules(modules, width=4).train()
    n = sum(1 for _ in model.modules())
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(2, 4)
    with tx.watch(model, opt, every=1) as w:
        for _ in range(samples):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    return {
        "modules": n,
        "samples": samples,
        "bytes": w.memory_bytes,
        "per_1000": w.memory_bytes * 1000 / n,
    }


def mlp(width: int, batch: int) -> tuple[nn.Module, Callable[[nn.Module], torch.Tensor]]:
    """An MNIST-sized MLP: 784 -> width -> width -> 10, ReLUs, ``batch`` random images."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(784, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10)
    )  # fmt: skip
    x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    return model, lambda m: F.cross_entropy(m(x), y)


def mlp_loop(width: int, batch: int, rounds: int) -> dict[str, Any]:
    """Three copies of one MLP, each with its own SGD: one watched (``every=10``) for the whole
    run, one bare, one watched with ``check_every_step=True`` (every step's gradients checked
    for NaN/Inf). Blocks of
    ``BLOCK`` steps interleaved (bare, watched, bare, checked, bare, ...); each watched (or
    checked) block against the mean of the bare blocks either side of it. The watch lives
    across blocks, as in a real loop: its first steps (rows made, hooks placed) are warm-up."""
    made = [mlp(width, batch) for _ in range(3)]
    (bare_m, loss_of), (watched_m, _), (checked_m, _) = made
    for m in (watched_m, checked_m):
        m.load_state_dict(bare_m.state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9) for m, _ in made]

    def block(i: int) -> float:
        model, opt = made[i][0], opts[i]
        t = time.perf_counter()
        for _ in range(BLOCK):
            opt.zero_grad()
            loss_of(model).backward()
            opt.step()
        return time.perf_counter() - t

    w = tx.watch(watched_m, opts[1], every=10)
    wc = tx.watch(checked_m, opts[2], every=10, check_every_step=True)
    try:
        for _ in range(3):
            for i in range(3):
                block(i)  # warm-up
        bare: list[float] = []
        ratios: dict[str, list[float]] = {"watch": [], "check": []}
        watched: list[float] = []
        checked: list[float] = []
        last = block(0)
        for r in range(rounds):
            on = block(1)
            mid = block(0)
            chk = block(2)
            end = block(0)
            bare += [last, mid]
            watched.append(on)
            checked.append(chk)
            ratios["watch"].append(on / ((last + mid) / 2))
            ratios["check"].append(chk / ((mid + end) / 2))
            last = end
            print(
                f"  mlp {width}x{batch} round {r + 1}/{rounds}: bare {mid / BLOCK * 1e3:.2f} ms, "
                f"watched {on / BLOCK * 1e3:.2f} ms, check {chk / BLOCK * 1e3:.2f} ms a step",
                file=sys.stderr,
            )
        steps = w.steps
    finally:
        w.close()
        wc.close()
    return {
        "model": f"MLP 784-{width}-{width}-10, batch {batch}, SGD",
        "step_s": statistics.median(bare) / BLOCK,
        "watch": statistics.median(ratios["watch"]),
        "check": statistics.median(ratios["check"]),
        "watched_steps": steps,
        "runs": {"bare": bare, "watched": watched, "checked": checked, "ratios": ratios},
    }


def mlp_table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| row | anchor: bare step | watch every 10 | every 10, check_every_step=True | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['step_s'] * 1e3:.2f} ms | {r['watch']:.3f}x | {r['check']:.3f}x "
            f"| <= {MLP_GOAL:.2f}x | {'yes' if r['watch'] <= MLP_GOAL else 'no'} |"
        )
    return "\n".join(out)


def table(rows: list[dict[str, Any]], buf: dict[str, Any]) -> str:
    out = [
        "| row | anchor | figure | goal | met |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        for key, goal in GOALS.items():
            ratio = r["ratios"][key]
            m = r["medians"]
            anchor = (
                f"bare step {m['bare']:.3f} s ({r['modules']} modules); sampled {m['sampled']:.3f} s, "
                f"unsampled {m['unsampled']:.3f} s"
            )
            out.append(
                f"| {r['model']}, watch {key} | {anchor} | {100 * (ratio - 1):+.1f}% ({ratio:.3f}x) "
                f"| <= {100 * (goal - 1):.0f}% | {'yes' if ratio <= goal else 'no'} |"
            )
    per = buf["per_1000"]
    out.append(
        f"| history, {buf['samples']} samples | {buf['modules']} modules | {buf['bytes'] / 1e6:.3f} MB "
        f"({per / 1e6:.3f} MB per 1,000 modules) | <= 1 MB per 1,000 | {'yes' if per <= BUFFER_GOAL else 'no'} |"
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.watch", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--only", nargs="*", default=["mlp", "resnet50", "llama", "buffer"])
    p.add_argument(
        "--mlp", nargs="*", default=["256x128"], help="MLP rows as WIDTHxBATCH (784-W-W-10)"
    )
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    rows = []
    small = []
    if "mlp" in a.only:
        for spec in a.mlp:
            width, batch = (int(v) for v in spec.split("x"))
            small.append(mlp_loop(width, batch, a.rounds))
        print(mlp_table(small))
    if "resnet50" in a.only:
        rows.append(
            overhead("timm ResNet-50, 2x3x128x128, SGD", lambda: resnet50(2, 128), a.rounds)
        )
    if "llama" in a.only:
        rows.append(
            overhead(
                "transformers Llama (4 layers, width 256), 2x128 tokens, SGD",
                lambda: llama(2, 128),
                a.rounds,
            )
        )
    buf = (
        buffer_bytes()
        if "buffer" in a.only
        else {"modules": 0, "samples": 0, "bytes": 0, "per_1000": 0}
    )
    if rows or "buffer" in a.only:
        print(table(rows, buf))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(
                {"mlp": small, "rows": rows, "buffer": buf, "threads": a.threads}, f, indent=1
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
