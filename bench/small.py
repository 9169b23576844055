"""The fake probe against torchinfo at both ends: small models and many modules.

``python -m bench.small [--repeats N] [--threads 1] [--only NAME ...] [--explore] [--meta]
[--torchinfo-max MODULES] [--json PATH]`` times, per
model and interleaved (probe, torchinfo, probe, torchinfo, ...), ``tx.probe(model, x)`` (fake,
FLOPs counted) and ``torchinfo.summary(model, input_data=[x])``, and prints one markdown row per
model: both medians and the median of the run-by-run ratios (goal <= 0.5x). The 10k / 100k
synthetic models (`bench.models.synthetic`) also give the module-count goal: 100k <= 10x 10k and
<= 1.5 s. The small models are the ones the issue names: a small CNN, the sweep's small-config
transformers Qwen2 / Gemma2 / Phi3 (`bench.sweep`), timm ResNet-18, torchvision MobileNet-V3
small and the torchao int8 ResNet-18.

Every row also gives a bare forward (``no_grad``) timed in the same turns, an anchor for rows
without torchinfo. ``--explore`` adds, on models of at most 20,000 modules, ``tx.explore(model, x)`` and its first state
(``get_state()``) outside a kernel, where the probe runs before ``explore`` returns (goal <= 1 s
at 10k modules), timed interleaved with the fake probe; the explorers are closed after the
timing.

``--meta`` adds a bare forward of a meta copy of each model (`anchors.on_meta`; models of at most
``--torchinfo-max`` modules): the output shapes from torch's meta kernels alone, no torchxray, no
mode. It is the floor under any shape inference that runs those kernels, and the fake probe
runs them only on an op it has not seen (`torchxray._fake.quick`).

It measures whichever torchxray it imports, so a before/after comparison runs it twice with
another ``PYTHONPATH`` (bench/README.md, "The fake probe's fixed cost").
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from .anchors import bare_forward, on_meta, torchinfo_summary
from .machine import machine
from .models import synthetic
from .timing import Timing, measure_interleaved, ms, ratio

Built = tuple[nn.Module, tuple[Any, ...]]


def _small_cnn() -> Built:
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    ).eval()
    return model, (torch.randn(1, 3, 32, 32),)


def _sweep(key: str) -> Callable[[], Built]:
    def build() -> Built:
        from .sweep.families import by_key

        (entry,) = by_key((key,))
        model = entry.build("cpu")
        args, kwargs = entry.inputs(model, torch.device("cpu"))
        if kwargs:  # torchinfo's input_data takes positional inputs: the ids only
            args = (*args, *kwargs.values())
        return model, tuple(args)

    return build


def _synthetic(n: int) -> Callable[[], Built]:
    return lambda: (synthetic(n).eval(), (torch.randn(4, 8),))


MODELS: dict[str, Callable[[], Built]] = {
    "small CNN": _small_cnn,
    "timm resnet18": _sweep("timm/resnet18"),
    "torchvision mobilenet_v3_small": _sweep("torchvision/mobilenet_v3_small"),
    "torchao resnet18 int8": _sweep("torchao/resnet18+Int8WeightOnlyConfig"),
    "transformers Qwen2 (small config)": _sweep("transformers/Qwen2ForCausalLM"),
    "transformers Gemma2 (small config)": _sweep("transformers/Gemma2ForCausalLM"),
    "transformers Phi3 (small config)": _sweep("transformers/Phi3ForCausalLM"),
    "synthetic 10k modules": _synthetic(10_000),
    "synthetic 100k modules": _synthetic(100_000),
}


def run(
    names: list[str],
    repeats: int,
    explore: bool = False,
    torchinfo_max: int | None = None,
    meta: bool = False,
) -> Iterator[dict[str, Any]]:
    import torchxray as tx

    for name in names:
        print(f"[bench.small] {name}", file=sys.stderr, flush=True)
        torch.manual_seed(0)
        model, args = MODELS[name]()
        modules = sum(1 for _ in model.modules())
        fns = {
            "probe": lambda m=model, a=args: tx.probe(m, *a),
            "bare": lambda m=model, a=args: bare_forward(m, *a),
        }
        if torchinfo_max is None or modules <= torchinfo_max:
            fns["torchinfo"] = lambda m=model, a=args: torchinfo_summary(m, *a)
        if meta and (torchinfo_max is None or modules <= torchinfo_max):
            fns["meta"] = _meta_forward(model, args)
        t = measure_interleaved(fns, repeats=repeats, budget_s=60.0)
        probe = t["probe"]
        info = t.get("torchinfo", Timing(error="not run (--torchinfo-max)"))
        on = t.get("meta")
        opened = _explore(model, args) if explore and modules <= 20_000 else None
        yield {
            "model": name,
            "modules": modules,
            "probe_s": probe.median,
            "torchinfo_s": info.median if info.ok else None,
            "bare_s": t["bare"].median,
            "bare_ratio": ratio(probe, t["bare"]),
            "ratio": ratio(probe, info) if info.ok else None,
            "meta_s": on.median if on is not None and on.ok else None,
            "meta_error": on.error if on is not None else None,
            "runs": len(probe.runs),
            "error": probe.error or (info.error if "torchinfo" in t else None),
            "explore": opened,
        }


def _meta_forward(model: nn.Module, args: tuple[Any, ...]) -> Callable[[], Any]:
    """The bare forward of a meta copy (`anchors.on_meta`), or its error when there is none."""
    try:
        meta, meta_args = on_meta(model, *args)
    except Exception as exc:  # a model that cannot be copied or moved: the figure says so

        def fails(exc: Exception = exc) -> Any:
            raise exc

        return fails
    return lambda: bare_forward(meta, *meta_args)


def _explore(model: nn.Module, args: tuple[Any, ...]) -> dict[str, Any]:
    """``tx.explore(model, *args)`` + ``get_state()`` against the fake probe, interleaved."""
    import torchxray as tx

    opened: list[Any] = []

    def explore() -> None:
        ex = tx.explore(model, *args)
        ex.get_state()
        opened.append(ex)

    t = measure_interleaved(
        {"explore": explore, "probe": lambda: tx.probe(model, *args)}, repeats=5, budget_s=60.0
    )
    for ex in opened:
        ex.close()
    ours, probe = t["explore"], t["probe"]
    return {
        "explore_s": ours.median,
        "probe_s": probe.median,
        "ratio": ratio(ours, probe),
        "runs": len(ours.runs),
        "error": ours.error or probe.error,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.small", description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--only", nargs="+", choices=list(MODELS), metavar="NAME")
    p.add_argument("--explore", action="store_true", help="also time tx.explore + first state")
    p.add_argument(
        "--torchinfo-max",
        type=int,
        metavar="MODULES",
        help="time torchinfo only on models of at most this many modules (it takes a minute a "
        "run at 100k); the others get the fake probe alone",
    )
    p.add_argument(
        "--meta",
        action="store_true",
        help="also time a bare forward of a meta copy of each model (torch's meta kernels alone)",
    )
    p.add_argument("--json", help="also write the rows as JSON here")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    import torchxray

    rows = list(
        run(args.only or list(MODELS), args.repeats, args.explore, args.torchinfo_max, args.meta)
    )
    print(f"torchxray from {torchxray.__file__}; {machine()}\n")
    print("| model | modules | fake probe | torchinfo | ratio | bare forward | probe / bare |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        cells = (
            f"fails: {r['error']}"
            if r["error"]
            else f"{ms(r['probe_s'])} | not run | n/a"
            if r["torchinfo_s"] is None
            else f"{ms(r['probe_s'])} | {ms(r['torchinfo_s'])} | {r['ratio']:.2f}x"
        )
        bare = f"{ms(r['bare_s'])} | {r['bare_ratio']:.2f}x"
        print(f"| {r['model']} | {r['modules']:,} | {cells} | {bare} |")
    if args.meta:
        print("\n| model | fake probe | meta forward (no torchxray) | probe / meta |")
        print("|---|---:|---:|---:|")
        for r in rows:
            cell = (
                f"{ms(r['meta_s'])} | {r['probe_s'] / r['meta_s']:.2f}x"
                if r["meta_s"] and r["probe_s"]
                else f"{r['meta_error'] or 'not run'} | n/a"
            )
            print(f"| {r['model']} | {ms(r['probe_s'])} | {cell} |")
    by = {r["model"]: r for r in rows}
    small, big = by.get("synthetic 10k modules"), by.get("synthetic 100k modules")
    if small and big and not (small["error"] or big["error"]):
        print(
            f"\n100k / 10k modules: {big['probe_s'] / small['probe_s']:.1f}x (goal <= 10x), "
            f"100k {ms(big['probe_s'])} (goal <= 1.5 s)"
        )
    for r in rows:
        e = r.get("explore")
        if e:
            cell = (
                f"fails: {e['error']}"
                if e["error"]
                else f"{ms(e['explore_s'])}, {e['ratio']:.2f}x its fake probe ({ms(e['probe_s'])})"
            )
            print(f"{r['model']}: tx.explore(model, x) + first state: {cell} (goal <= 1 s at 10k)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "torchxray": torchxray.__file__, "rows": rows}, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
