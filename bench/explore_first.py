"""``tx.explore`` outside a kernel (a script) on the synthetic 10k and 100k models, issue 55
(``python -m bench.explore_first``; bench/README.md, "Issue 55").

Timed interleaved per round and model, each after a garbage collection:

- walk: ``tx.walk(model)``, the tree alone (the anchor);
- first state: ``tx.explore(model, x)`` until it returns (the walk and the first synced state:
  a model of ``Explorer.probe_when_asked_from`` modules or more sends its outline, and leaves
  the full tree and the probe until asked for); goal <= 1 s at 100k;
- asked: then ``ex.probe_report`` (the full tree state, then the fake probe);
- probe: ``tx.probe(model, x)`` alone (the anchor of "asked");
- all at once: ``tx.explore(model, x)`` with ``probe_when_asked_from`` out of reach, as before
  issue 55 (the full tree state and the probe before it returns).

Ratios are of medians measured in the same run. One intra-op thread (``--threads``).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any

import torch

import torchxray as tx
from torchxray.widget import Explorer

from .models import synthetic

GOAL_S = 1.0


def _timed(fn: Any) -> tuple[float, Any]:
    gc.collect()
    t = time.perf_counter()
    got = fn()
    return time.perf_counter() - t, got


def measure(modules: int, rounds: int) -> dict[str, Any]:
    model, x = synthetic(modules).eval(), torch.randn(4, 8)
    tx.probe(model, x)  # warm: the first probe of a process pays torch's own first calls
    tx.explore(model, x).close()
    runs: dict[str, list[float]] = {
        "walk": [], "first state": [], "asked": [], "probe": [], "all at once": []
    }  # fmt: skip
    for r in range(rounds):
        s, tree = _timed(lambda: tx.walk(model))
        runs["walk"].append(s)
        del tree
        s, ex = _timed(lambda: tx.explore(model, x))
        runs["first state"].append(s)
        s, report = _timed(lambda e=ex: e.probe_report)
        runs["asked"].append(s)
        assert report is not None and report.ok
        ex.close()
        del ex, report
        s, report = _timed(lambda: tx.probe(model, x))
        runs["probe"].append(s)
        del report
        kept, Explorer.probe_when_asked_from = Explorer.probe_when_asked_from, 1 << 62
        try:  # as before issue 55
            s, ex = _timed(lambda: tx.explore(model, x))
        finally:
            Explorer.probe_when_asked_from = kept
        runs["all at once"].append(s)
        ex.close()
        del ex
        last = ", ".join(f"{k} {v[-1]:.2f}s" for k, v in runs.items())
        print(f"  {modules} modules, round {r + 1}/{rounds}: {last}", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"modules": sum(1 for _ in model.modules()), "medians": med, "runs": runs}


def table(rows: list[dict[str, Any]]) -> str:
    out = [
        "| model | modules | walk (anchor) | first state | first state / walk | goal | asked: full tree + probe | fake probe alone | asked / probe | all at once (before) | before / walk |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    for r in rows:
        m = r["medians"]
        goal = f"<= {GOAL_S:.0f} s: {'met' if m['first state'] <= GOAL_S else 'not met'}"
        out.append(
            f"| synthetic | {r['modules']:,} | {m['walk'] * 1e3:.0f} ms | {m['first state'] * 1e3:.0f} ms "
            f"| {m['first state'] / m['walk']:.2f}x | {goal} | {m['asked'] * 1e3:.0f} ms "
            f"| {m['probe'] * 1e3:.0f} ms | {m['asked'] / m['probe']:.2f}x "
            f"| {m['all at once'] * 1e3:.0f} ms | {m['all at once'] / m['walk']:.2f}x |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.explore_first", description=__doc__.splitlines()[0]
    )
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    rows = [measure(n, a.rounds) for n in a.sizes]
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
