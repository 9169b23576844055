"""`tx.memory` against the fake probe of the same model (goal: memory <= 1.0x the probe).

`python -m bench.memory [--repeats 7] [--training] [--json PATH]`. Per model, interleaved in one
process (`bench.timing.measure_interleaved`): `tx.probe(model, x)` (fake, memoised),
`tx.memory(model, x)` (a forward, repeated blocks replayed: `_memory.memo`) and the same with
``memoise=False`` (every block traced, what it cost before the memo). ``--training`` adds
`tx.memory(..., training=True, optimizer="adamw")`, which traces every block (its backward needs
each block's graph), with fewer repeats. Models: the transformers Llama-3-70B and Mixtral-8x7B
architectures on meta in bf16 (`bench.real`), 1x128 tokens; GPT-2 (12 layers) on the CPU.
Prints a markdown table; each ratio divides two medians measured a moment apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

from . import real
from .timing import Timing, measure_interleaved, ms, ratio

CASES: list[tuple[str, Any, str]] = [
    ("Llama-70B (transformers, meta)", real.llama_70b, "meta"),
    ("Mixtral-8x7B (transformers, meta)", real.mixtral_8x7b, "meta"),
    ("GPT-2 124M (transformers)", real.gpt2, "cpu"),
]


def _probe(model: torch.nn.Module, x: tuple[Any, ...]) -> Any:
    import torchxray as tx

    rep = tx.probe(model, *x)
    if not rep.ok:
        raise RuntimeError(f"probe failed at {rep.error.path!r}: {rep.error.message}")
    return rep


def _memory(model: torch.nn.Module, x: tuple[Any, ...], **options: Any) -> Any:
    from torchxray.memory import run_memory

    return run_memory(model, x, {}, **options)


def run(repeats: int, training: bool) -> list[dict[str, Any]]:
    rows = []
    for name, make, device in CASES:
        print(f"memory: {name}", file=sys.stderr, flush=True)
        model = make()
        x = real.tokens(model, device=device)
        t = measure_interleaved(
            {
                "probe": lambda m=model, a=x: _probe(m, a),
                "memory": lambda m=model, a=x: _memory(m, a),
                "full": lambda m=model, a=x: _memory(m, a, memoise=False),
            },
            repeats,
            budget_s=120.0,
        )
        row: dict[str, Any] = {"model": name, **{k: v.runs for k, v in t.items()}}
        row["errors"] = {k: v.error for k, v in t.items() if v.error}
        if training:
            tt = measure_interleaved(
                {
                    "probe": lambda m=model, a=x: _probe(m, a),
                    "train": lambda m=model, a=x: _memory(m, a, training=True, optimizer="adamw"),
                },
                max(1, min(repeats, 3)),
                budget_s=120.0,
            )
            row["train"], row["train_probe"] = tt["train"].runs, tt["probe"].runs
            row["errors"].update({f"train {k}": v.error for k, v in tt.items() if v.error})
        rep = _memory(model, x)
        row["memoised"] = len(rep.memoised)
        rows.append(row)
        del model
    return rows


def _t(runs: list[float]) -> Timing:
    return Timing(runs=list(runs))


def render(rows: list[dict[str, Any]]) -> str:
    out = [
        "| model | fake probe | tx.memory | memory / probe | memory, every block traced | "
        "traced / probe | blocks replayed | training step (every block) | training / probe |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        probe, mem, full = _t(r["probe"]), _t(r["memory"]), _t(r["full"])
        cells = [r["model"], ms(probe.median), ms(mem.median), f"{ratio(mem, probe):.2f}x",
                 ms(full.median), f"{ratio(full, probe):.2f}x", str(r["memoised"])]  # fmt: skip
        if r.get("train"):
            train, tprobe = _t(r["train"]), _t(r["train_probe"])
            cells += [ms(train.median), f"{ratio(train, tprobe):.1f}x"]
        else:
            cells += ["–", "–"]
        out.append("| " + " | ".join(cells) + " |")
        if r["errors"]:
            out.append(f"| {r['model']}: fails | {r['errors']} |" + " |" * 7)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--training", action="store_true", help="also time a training step's memory")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    p.add_argument("--json", type=Path, help="also write the timings as JSON here")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = run(args.repeats, args.training)
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
