"""`python -m bench.sweep [--family F ...] [--limit N] [--every]`: the ecosystem sweep.

Builds every model of each family from configs (random weights; on meta where big), runs its bare
forward and torchxray's checks on it, and prints per family: attempted, bare forward ok, each
check's rate, and every failing model with its first error line. `--every` runs all of timm and
open_clip (else one model per timm family and four open_clip towers); `--json` keeps every
outcome for a later `--render`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from ..machine import machine
from .checks import CHECKS, Outcome, run
from .families import FAMILIES, SAMPLE, by_key, entries
from .report import render


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__.splitlines()[0])
    p.add_argument("--family", nargs="+", choices=list(FAMILIES), help="only these families")
    p.add_argument("--limit", type=int, help="at most N models per family")
    p.add_argument("--every", action="store_true", help="every timm and open_clip model")
    p.add_argument("--sample", action="store_true", help="the test suite's fixed sample only")
    p.add_argument("--match", nargs="+", help="only models whose name contains one of these texts")
    p.add_argument("--json", type=Path, help="write every outcome here (JSON lines, as it runs)")
    p.add_argument(
        "--resume", action="store_true", help="with --json: skip the models it holds, append"
    )
    p.add_argument("--render", type=Path, help="run nothing: print the table of a --json file")
    p.add_argument(
        "--only", nargs="+", choices=[c for c in CHECKS if c not in ("bare", "untouched")],
        default=(), help="run only these checks (the bare forward and the untouched ones always)",
    )  # fmt: skip
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.render:
        rows = [Outcome(**json.loads(line)) for line in args.render.read_text().splitlines()]
        print(render(rows))
        return 0
    torch.set_num_threads(args.threads)
    todo = by_key(SAMPLE) if args.sample else list(entries(args.family, every=args.every))
    if args.match:
        todo = [e for e in todo if any(text in e.name for text in args.match)]
    if args.limit:
        per: dict[str, int] = {}
        todo = [
            e
            for e in todo
            if (per.setdefault(e.family, 0), per.update({e.family: per[e.family] + 1}))[0]
            < args.limit
        ]  # noqa: E501
    outcomes = []
    if args.resume and args.json and args.json.exists():  # a long sweep stopped midway goes on
        outcomes = [Outcome(**json.loads(x)) for x in args.json.read_text().splitlines() if x]
        done = {(o.family, o.group, o.name) for o in outcomes}
        todo = [e for e in todo if (e.family, e.group, e.name) not in done]
    sink = args.json.open("a" if args.resume else "w") if args.json else None
    start = time.perf_counter()
    for i, entry in enumerate(todo, 1):
        o = run(entry, tuple(args.only))
        outcomes.append(o)
        bad = o.first_error()
        status = "ok" if bad is None and o.status("bare") == "ok" else (bad[0] if bad else "bare")
        print(f"[{i}/{len(todo)}] {o.family}/{o.name} [{o.device}] {status} {o.seconds:.1f}s",
              file=sys.stderr, flush=True)  # fmt: skip
        if sink:
            sink.write(json.dumps(asdict(o)) + "\n")
            sink.flush()
    minutes = (time.perf_counter() - start) / 60
    stamp = time.strftime("%Y-%m-%d")
    print(
        render(
            outcomes,
            f"Sweep of {stamp} on {machine()}, {len(outcomes)} models, {minutes:.0f} min\n",
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
