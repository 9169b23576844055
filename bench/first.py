"""The first probe of a fresh process, where a notebook user meets it: ``python -m bench.first
[--runs N] [--only NAME ...]``.

`bench.small` times warm probes (one warm-up first). A fresh process pays more once: the first
fake probe makes the first ``FakeTensorMode``, whose constructor imports ``torch._dynamo`` (its
config module; about 1 s here, 800 modules with sympy); timm, torchvision, transformers and
diffusers import it themselves when they load, so only a model built from torch alone pays it in
the probe. Each run here is a new interpreter that imports torch and torchxray, builds the
model (`bench.small.MODELS`), then times its first and second ``tx.probe`` and its first and
second ``torchinfo.summary``; ``dynamo before probe`` says whether the model's library had
imported torch._dynamo already. Medians over the runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from .machine import machine
from .small import MODELS
from .timing import ms

_CHILD = """
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import torch
torch.set_num_threads(1)
import torchxray as tx
from bench.anchors import torchinfo_summary
from bench.small import MODELS
model, args = MODELS[sys.argv[1]]()
loaded = "torch._dynamo" in sys.modules
t = []
for f in (tx.probe, tx.probe, torchinfo_summary, torchinfo_summary):
    s = time.perf_counter(); f(model, *args); t.append(time.perf_counter() - s)
print(json.dumps({"times": t, "dynamo": loaded}))
"""

SMALL = [n for n in MODELS if "synthetic" not in n]


def first(name: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.first", description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", nargs="+", choices=SMALL, metavar="NAME")
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # as each child runs (the machine line reads it here)
    print(f"{machine()}\n")
    print(
        "| model | dynamo before probe | first probe | second probe | first torchinfo "
        "| second torchinfo |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for name in a.only or SMALL:
        runs = [first(name) for _ in range(a.runs)]
        med = [statistics.median(r["times"][i] for r in runs) for i in range(4)]  # type: ignore[index]
        loaded = "yes" if all(r["dynamo"] for r in runs) else "no"
        print(f"| {name} | {loaded} | " + " | ".join(ms(x) for x in med) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
