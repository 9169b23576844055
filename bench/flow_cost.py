"""What call sites and dataflow edges cost the fake probe (goal: <= 1.2x without them).

`python -m bench.flow_cost [--repeats 7] [--threads 1]`. For each real model (timm ResNet-50 and
ConvNeXt-T, transformers GPT-2, BERT and a small Llama on the CPU, the Llama-70B architecture on
meta) it times ``tx.probe(model, x)`` in fake mode with sites and edges recorded (as always) and
with both turned off (``_probe.calls._TRACE_FLOW``, the switch kept for this bench), interleaved
run by run, and prints the median of each and the median of the run-by-run ratios. The memo
stays on in both arms, as in every fake probe. Nothing is timed in the tests.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import torch

import torchxray as tx
from torchxray._probe import calls

from . import real
from .timing import measure_interleaved

MODELS: list[tuple[str, Callable[[], Any], Callable[[Any], tuple[Any, ...]]]] = [
    ("timm resnet50", real.resnet50, lambda m: (torch.randn(1, 3, 224, 224),)),
    ("timm convnext_tiny", real.convnext_tiny, lambda m: (torch.randn(1, 3, 224, 224),)),
    ("transformers GPT-2", real.gpt2, real.tokens),
    ("transformers BERT", real.bert, real.tokens),
    ("transformers Llama (CPU)", real.llama_cpu, real.tokens),
    ("transformers Llama-70B (meta)", real.llama_70b, lambda m: real.tokens(m, "meta")),
]


def _probe(model: Any, args: tuple[Any, ...], trace: bool) -> Callable[[], Any]:
    def run() -> Any:
        calls._TRACE_FLOW = trace
        try:
            rep = tx.probe(model, *args)
            assert rep.ok, rep.error
            # The edges are made when first read; reading them is part of their cost.
            return len(rep.edges) if trace else 0
        finally:
            calls._TRACE_FLOW = True

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: keep)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(
        "| model | fake probe, sites + edges (ms) | without (ms) | ratio (median of runs) | goal |"
    )
    print("|---|---|---|---|---|")
    for name, make, inputs in MODELS:
        model = make()
        x = inputs(model)
        got = measure_interleaved(
            {"with": _probe(model, x, True), "without": _probe(model, x, False)}, args.repeats
        )
        w, wo = got["with"], got["without"]
        if not (w.ok and wo.ok):
            print(f"| {name} | {w.error or ''} | {wo.error or ''} | | |")
            continue
        ratio = statistics.median(a / b for a, b in zip(w.runs, wo.runs, strict=True))
        verdict = "pass" if ratio <= 1.2 else "FAIL"
        print(
            f"| {name} | {w.median * 1e3:.0f} | {wo.median * 1e3:.0f} | {ratio:.2f}x | "
            f"<= 1.2x: {verdict} |",
            flush=True,
        )
        del model, x


if __name__ == "__main__":
    main()
