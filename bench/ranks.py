"""`tx.ranks` against the real run it plans (goal: the dry run <= 0.5x a gloo run of the same plan),
and a 64-rank plan of the Llama-3-70B architecture on meta (goal: <= 30 s).

`python -m bench.ranks [--repeats 3] [--big-only] [--skip-big] [--every-block] [--no-medium]
[--medium-only]`.
Small cases: the tiny transformers Llama of the tests (`tests/fixtures/ranks.py`; width 64, its
real step mostly fixed costs) and a 512-wide, 4-layer one (about 25 M parameters, 2 x 128 tokens:
a real step that computes), each under FSDP2 over dp=4 and the torchtitan-style plan over
dp 2 x tp 2 (`--medium-only`: the 512-wide one alone, so that its first dry run is the
process's first); per repeat, `tx.ranks(...)` (the dry run: fake process
group, fake step) and `plan.verify()` (4 gloo processes: start, shard, step, compare), medians of
`--repeats`. The first dry run of a plan in a process works out DTensor's sharding rules, which
later ones find warm (`_ranks.warm`): its time is given apart ("first") from the median of the
later ones ("later"), and the real run's median is the anchor of both. Big case:
`bench.real.llama_70b()` (meta, bf16), the torchtitan-style plan over dp 8 x tp 8, 1 x 128 tokens,
with every layer stepped (under ``--every-block``; first, so that it is the process's first plan)
and with ``sample_blocks=True`` (4 and 5 of the 80 layers stepped, `_ranks.blocks`). Prints a
markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import torchxray as tx  # noqa: E402

from . import real  # noqa: E402
from .machine import machine  # noqa: E402


def _small_llama() -> Any:
    """A small transformers Llama where the real step computes more than it waits: width 512,
    4 layers, vocab 8000 (about 25 M parameters), 2 x 128 tokens; built from a config."""
    from fixtures.ranks import llama_of

    return llama_of(512, 1376, layers=4, heads=8, kv_heads=4, vocab=8000, positions=256)


def _small(repeats: int, tiny: bool, medium: bool) -> list[dict[str, Any]]:
    from fixtures.ranks import fsdp, tiny_llama, titan, tokens

    rows = []
    models = [("tiny Llama", tiny_llama(), tokens())] if tiny else []
    if medium:
        models.append(("Llama width 512, 4 layers", _small_llama(), tokens(2, 128, 8000)))
    for label, model, x in models:
        rows += _cases(label, model, x, repeats, fsdp, titan)
    return rows


def _cases(
    label: str, model: Any, x: Any, repeats: int, fsdp: Any, titan: Any
) -> list[dict[str, Any]]:
    rows = []
    for name, fn, mesh in (
        ("FSDP2, dp=4", fsdp, {"dp": 4}),
        ("torchtitan-style, dp 2 x tp 2", titan, {"dp": 2, "tp": 2}),
    ):
        dry, wet = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            plan = tx.ranks(model, fn, mesh=mesh, args=(x,))
            dry.append(time.perf_counter() - t)
            t = time.perf_counter()
            v = plan.verify(timeout=300)
            wet.append(time.perf_counter() - t)
            if not v.ok:
                raise RuntimeError(f"{name}: verify disagrees: {v.mismatches[:3]}")
        first, later, w = dry[0], statistics.median(dry[1:] or dry), statistics.median(wet)
        worst = max(abs(e) for e in v.memory_error.values())
        rows.append(
            {
                "case": f"{label}, {name}",
                "first": first,
                "later": later,
                "real": w,
                "memory": worst,
            }
        )
    return rows


def _big(every_block: bool) -> list[dict[str, Any]]:
    from fixtures.ranks import titan

    rows = []
    model = real.llama_70b()
    x = real.tokens(model, device="meta")
    for sample in ([False] if every_block else []) + [True]:
        t = time.perf_counter()
        plan = tx.ranks(model, titan, mesh={"dp": 8, "tp": 8}, args=x, sample_blocks=sample)
        s = time.perf_counter() - t
        rows.append(
            {
                "case": f"Llama-3-70B (meta), dp 8 x tp 8, {'4+5 layers stepped' if sample else 'every layer stepped'}",
                "dry": s,
                "peak": plan.memory.get(0),
                "params": plan.memory_parts[0].params if plan.memory_parts else None,
                "notes": plan.notes,
                "ranks": plan.world_size,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--big-only", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--every-block", action="store_true")
    ap.add_argument(
        "--no-medium",
        action="store_true",
        help="skip the 512-wide Llama (its real runs take longer)",
    )
    ap.add_argument(
        "--medium-only",
        action="store_true",
        help="only the 512-wide Llama: its first dry run is then the process's first",
    )
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    print(f"machine: {machine()}\n")
    if not a.big_only:
        print(
            "| case | dry run, first | dry run, later (median) | real gloo run (4 processes, median) "
            "| first / real | later / real | memory, worst rank |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for r in _small(a.repeats, tiny=not a.medium_only, medium=not a.no_medium):
            print(
                f"| {r['case']} | {r['first']:.2f} s | {r['later']:.2f} s | {r['real']:.2f} s "
                f"| {r['first'] / r['real']:.2f}x | {r['later'] / r['real']:.2f}x | {r['memory']:+.1%} |"
            )
    if not a.skip_big:
        print("\n| case | ranks | dry run | rank 0 peak | rank 0 params |")
        print("|---|---:|---:|---:|---:|")
        for r in _big(a.every_block):
            peak = "not given (notes)" if r["peak"] is None else f"{r['peak'] / 2**30:.3f} GiB"
            params = "" if r["params"] is None else f"{r['params'] / 2**30:.2f} GiB"
            print(f"| {r['case']} | {r['ranks']} | {r['dry']:.1f} s | {peak} | {params} |")
            for note in r["notes"]:
                print(f"  note: {note}")


if __name__ == "__main__":
    main()
