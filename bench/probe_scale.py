"""The fake probe's cost per module, issue 55 (``python -m bench.probe_scale``; bench/README.md,
"Issue 55"): ``tx.probe(model, x)`` on the synthetic 100k-module model against the same on the
10k one (the anchor), interleaved (10k, 100k, 10k, ...), each after a garbage collection, in
wall-clock and in the thread's CPU time (which other processes on a shared machine move less).
Goal: 100k / 10k <= 10x (cost linear in modules). The bare forward of each model (``no_grad``)
is timed in the same turns: its own 100k / 10k says what the machine's caches do to a pass over
ten times the objects, whatever the probe does.
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

from .models import synthetic

GOAL = 10.0


def _timed(fn: Any) -> tuple[float, float]:
    gc.collect()
    w, c = time.perf_counter(), time.thread_time()
    got = fn()
    out = time.perf_counter() - w, time.thread_time() - c
    del got
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.probe_scale", description=__doc__.splitlines()[0]
    )
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", default="")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    x = torch.randn(4, 8)
    models = {n: synthetic(n).eval() for n in (10_000, 100_000)}
    for m in models.values():
        tx.probe(m, x)  # warm-up
    runs: dict[str, list[tuple[float, float]]] = {}
    for r in range(a.rounds):
        for n, m in models.items():
            runs.setdefault(f"probe {n}", []).append(_timed(lambda m=m: tx.probe(m, x)))

            def bare(m: Any = m) -> Any:
                with torch.no_grad():
                    return m(x)

            runs.setdefault(f"bare {n}", []).append(_timed(bare))
        got = {k: v[-1][0] for k, v in runs.items()}
        print(
            f"  round {r + 1}/{a.rounds}: " + ", ".join(f"{k} {s:.2f}s" for k, s in got.items()),
            file=sys.stderr,
        )
    med = {
        k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
        for k, v in runs.items()
    }
    per_round = [b[0] / s[0] for s, b in zip(runs["probe 10000"], runs["probe 100000"])]
    per_round_cpu = [b[1] / s[1] for s, b in zip(runs["probe 10000"], runs["probe 100000"])]
    rows = [
        "| figure | 10k (anchor) | 100k | 100k / 10k | goal | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for what, i in (("wall", 0), ("thread CPU", 1)):
        s, b = med["probe 10000"][i], med["probe 100000"][i]
        rows.append(
            f"| fake probe, {what} | {s * 1e3:.0f} ms | {b * 1e3:.0f} ms | {b / s:.2f}x | <= {GOAL:.0f}x "
            f"| {'yes' if b / s <= GOAL else 'no'} |"
        )
    for what, i in (("wall", 0), ("thread CPU", 1)):
        s, b = med["bare 10000"][i], med["bare 100000"][i]
        rows.append(
            f"| bare forward, {what} | {s * 1e3:.0f} ms | {b * 1e3:.0f} ms | {b / s:.2f}x | (a pass over 10x the objects) | |"
        )
    print("\n".join(rows))
    print(
        f"\nper round, 100k / 10k: wall {', '.join(f'{v:.1f}' for v in per_round)} (median {statistics.median(per_round):.2f}x); "
        f"CPU {', '.join(f'{v:.1f}' for v in per_round_cpu)} (median {statistics.median(per_round_cpu):.2f}x)"
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "medians": med}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
