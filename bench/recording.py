"""What notebook-wide recording costs: ``python -m bench.recording [--repeats N]``.

``tx.record_everything()`` (``%load_ext torchxray``) records the constructor arguments of every
module built after it. This bench builds each model with and without it, interleaved (plain,
recorded, recorded, plain, ...), and reports the medians and the median of the run-by-run ratios
(goal: at most 1.10). The anchor is the same construction without recording. Times are the
thread's CPU time (`time.thread_time`, torch on one thread): a build is single-threaded Python and
kernels, and on a shared machine wall time mostly measures the waits for a core (two runs there
gave ResNet-50 ratios of 0.92 and 1.18 within minutes).

Models, built in code with random init (nothing downloaded): timm ResNet-50
(``create_model("resnet50", pretrained=False)``, its weight init included, as people build it),
a transformers ``LlamaForCausalLM`` at bench/real.py's CPU size (87 M parameters) and the same
Llama on the meta device (no init cost: the recording's own cost shows most there).

It also checks what recording keeps alive: after a recorded model is deleted, no tensor of it
is left (a weak reference to one of its parameters is dead).
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
import warnings
import weakref
from collections.abc import Callable

import torch
from torch import nn

import torchxray as tx

from .real import LLAMA_CPU
from .timing import measure_interleaved, ms, ratio

GOAL = 1.10


def _resnet50() -> nn.Module:
    import timm

    return timm.create_model("resnet50", pretrained=False)


def _llama(meta: bool) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers

        cfg = transformers.LlamaConfig(**LLAMA_CPU)
        if meta:
            with torch.device("meta"):
                return transformers.LlamaForCausalLM(cfg)
        return transformers.LlamaForCausalLM(cfg)

    return make


MODELS: dict[str, Callable[[], nn.Module]] = {
    "timm ResNet-50": _resnet50,
    "transformers Llama (87 M, CPU)": _llama(meta=False),
    "transformers Llama (87 M, meta)": _llama(meta=True),
}


def _recorded(make: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def run() -> nn.Module:
        tx.record_everything()
        try:
            return make()
        finally:
            tx.record_everything(False)

    return run


def keeps_no_tensor(make: Callable[[], nn.Module]) -> bool:
    """Build with recording, drop the model: is its first parameter collected?"""
    with tx.record_init_args():
        model = make()
    ref = weakref.ref(next(model.parameters()))
    del model
    gc.collect()
    return ref() is None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    torch.set_num_threads(args.threads)
    rows = [
        "| model | build | build, recording everything | ratio (goal <= 1.10) | model freed |",
        "|---|---|---|---|---|",
    ]
    worst = 0.0
    for name, make in MODELS.items():
        t = measure_interleaved(
            {"plain": make, "recorded": _recorded(make)},
            args.repeats,
            budget_s=120.0,
            clock=time.thread_time,
            alternate=True,
        )
        r = ratio(t["recorded"], t["plain"])
        worst = max(worst, r)
        freed = "yes" if keeps_no_tensor(make) else "NO: a record keeps its tensors"
        rows.append(
            f"| {name} | {ms(t['plain'].median)} | {ms(t['recorded'].median)} | {r:.3f} | {freed} |"
        )
        print(rows[-1], flush=True)
    print("\n".join(["", *rows]))
    print(f"\nworst ratio {worst:.3f} (goal <= {GOAL}); medians of {args.repeats} interleaved runs")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
