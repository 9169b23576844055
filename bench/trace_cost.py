"""What leaving no trace costs a probe (issue 39; goal: <= 1.05x on the fake probe of the 100k
model and of the Llama-70B architecture on meta).

`python -m bench.trace_cost [--repeats 7] [--threads 1]`. For each model it times ``tx.probe``
with the run's `_trace.Trace` (modules taken at their first call, containers, hooks, torch's
flags, in-place writes; a real run's dispatch guard) and without it (a stand-in that watches
nothing, as the probe ran before issue 39: the attribute snapshot of `_fake/state.py` stays in
both arms), interleaved run by run on the thread's CPU clock, and prints the median of each and
the median of the run-by-run ratios. Nothing is timed in the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

import torchxray as tx
from torchxray._probe import run as probe_run
from torchxray._trace.trace import Trace

from . import models, real
from .timing import measure_interleaved


class _Off(Trace):
    """Watches nothing: the probe without issue 39's trace."""

    touch = None  # type: ignore[assignment]

    def __enter__(self) -> _Off:
        return self

    def guard(self) -> Any:  # type: ignore[override]
        return contextlib.nullcontext()

    def finish(self) -> list[Any]:
        return []


def _x(shape: tuple[int, ...]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda m: (torch.randn(*shape),)


MODELS: list[tuple[str, str, Callable[[], Any], Callable[[Any], tuple[Any, ...]]]] = [
    ("synthetic 100k modules", "fake", lambda: models.synthetic(100_000), _x((4, 8))),
    ("transformers Llama-70B (meta)", "fake", real.llama_70b, lambda m: real.tokens(m, "meta")),
    (
        "demo LlamaLike 70B (meta)",
        "fake",
        models.llama_70b,
        lambda m: (torch.zeros(1, 128, dtype=torch.long, device="meta"),),
    ),
    ("timm resnet50", "fake", real.resnet50, _x((1, 3, 224, 224))),
    ("timm resnet50", "real", real.resnet50, _x((1, 3, 224, 224))),
    ("transformers Llama (CPU)", "real", real.llama_cpu, real.tokens),
    (
        "torchvision mobilenet_v3_small",
        "real",
        lambda: _tv("mobilenet_v3_small"),
        _x((1, 3, 224, 224)),
    ),
    ("synthetic 10k modules", "real", lambda: models.synthetic(10_000), _x((4, 8))),
]


def _tv(name: str) -> Any:
    import torchvision

    return getattr(torchvision.models, name)(weights=None).eval()


def _probe(model: Any, args: tuple[Any, ...], mode: str, on: bool) -> Callable[[], Any]:
    def run() -> Any:
        probe_run.Trace = Trace if on else _Off
        try:
            rep = tx.probe(model, *args, mode=mode)
            assert rep.ok, rep.error
        finally:
            probe_run.Trace = Trace

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--only", nargs="+", help="models whose name contains one of these")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print("| model | probe | with the trace (ms) | without (ms) | ratio (median of runs) |")
    print("|---|---|---|---|---|")
    for name, mode, make, inputs in MODELS:
        if args.only and not any(o in name for o in args.only):
            continue
        model = make()
        x = inputs(model)
        got = measure_interleaved(
            {"with": _probe(model, x, mode, True), "without": _probe(model, x, mode, False)},
            args.repeats,
            clock=time.thread_time,
            alternate=True,
        )
        w, wo = got["with"], got["without"]
        if not (w.ok and wo.ok):
            print(f"| {name} | {mode} | {w.error or ''} | {wo.error or ''} | |")
            continue
        ratio = statistics.median(a / b for a, b in zip(w.runs, wo.runs, strict=True))
        print(
            f"| {name} | {mode} | {w.median * 1e3:.0f} | {wo.median * 1e3:.0f} | {ratio:.3f}x |",
            flush=True,
        )
        del model, x


if __name__ == "__main__":
    main()
