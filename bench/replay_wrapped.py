"""The fake probe of the Llama-70B architecture against torchinfo.summary, on the pinned and the
newest transformers in one run (issue 58, goal <= 0.15x on both).

`python -m bench.replay_wrapped [--repeats 5] [--latest .venv-latest/bin/python]`. In this
interpreter (the pinned libraries) it times ``tx.probe(model, ids)`` (fake mode) and
``torchinfo.summary`` interleaved, run by run, on ``bench.real.llama_70b()`` (meta, bf16, 1 x 128
tokens), and prints the median of each and the median of the run-by-run ratios; then it runs
itself in the upstream lane's interpreter (`make test-latest` builds it; skipped when it is not
there) and prints that row too. Times are the probing thread's CPU time (`time.thread_time`),
so that other processes on a shared machine do not skew a ratio. Each ratio is against torchinfo in the same process: the two
interpreters may differ in torch as well as transformers, so only ratios are compared. Also shown:
how many decoder layers the memo replayed, and `rep.not_replayed`'s first sentence when it ran
them all (a wrapper it could not see through).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

GOAL = 0.15


def measure(repeats: int) -> dict[str, Any]:
    """This interpreter's row: versions, medians (ms), the median ratio, replayed layers."""
    import torch
    import transformers

    import torchxray as tx

    from . import anchors, real
    from .timing import measure_interleaved

    warnings.filterwarnings("ignore")
    model = real.llama_70b()
    ids = real.tokens(model, "meta")
    last: dict[str, Any] = {}

    def probe() -> None:
        rep = tx.probe(model, *ids)
        assert rep.ok, rep.error
        last["rep"] = rep

    got = measure_interleaved(
        {"fake": probe, "info": lambda: anchors.torchinfo_summary(model, *ids)},
        repeats,
        warmup=1,
        # CPU time of this thread: both are single-threaded on meta, and other processes' load
        # on a shared machine then costs neither arm anything.
        clock=time.thread_time,
        alternate=True,
    )
    fake, info = got["fake"], got["info"]
    rep = last["rep"]
    return {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "fake_ms": fake.median * 1e3,
        "info_ms": info.median * 1e3,
        "ratio": statistics.median(a / b for a, b in zip(fake.runs, info.runs, strict=True)),
        "replayed": sum(1 for p in rep.memoised if re.fullmatch(r"model\.layers\.\d+", p)),
        "why": rep.not_replayed[0] if rep.not_replayed else "",
    }


def _row(r: dict[str, Any]) -> str:
    verdict = "pass" if r["ratio"] <= GOAL else "FAIL"
    why = f" ({r['why']})" if r["why"] else ""
    return (
        f"| {r['transformers']} | {r['torch']} | {r['fake_ms']:.0f} | {r['info_ms']:.0f} | "
        f"{r['ratio']:.3f}x | {r['replayed']}/80{why} | <= {GOAL}x: {verdict} |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--latest", type=Path, default=Path(".venv-latest/bin/python"))
    p.add_argument("--json", action="store_true", help="print this interpreter's row as JSON")
    args = p.parse_args()
    if args.json:
        print(json.dumps(measure(args.repeats)))
        return
    print(
        "| transformers | torch | fake probe (ms) | torchinfo.summary (ms) | ratio | layers replayed | goal |"
    )  # noqa: E501
    print("|---|---|---|---|---|---|---|")
    print(_row(measure(args.repeats)), flush=True)
    if not args.latest.exists():
        print(f"(no {args.latest}: run `make test-latest` to build the upstream lane)")
        return
    cmd = [str(args.latest), "-m", "bench.replay_wrapped", "--json", "--repeats", str(args.repeats)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"(the upstream lane's run failed: {done.stderr.strip().splitlines()[-1:]})")
        sys.exit(1)
    print(_row(json.loads(done.stdout.strip().splitlines()[-1])))


if __name__ == "__main__":
    main()
