"""`python -m bench [--quick]`: measure torchxray against its anchors in one run, print markdown.

Every ratio compares two figures measured in the same process a moment apart, so a noisy or slow
machine moves both sides together. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from . import models, real, saved, suites
from .gpu import gpu_suite
from .machine import machine
from .report import Results, probe_summary, render

SECTIONS = ("walk", "probe", "edit", "sizes", "browser", "gpu")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 repeats, no treescope on 100k modules")
    p.add_argument(
        "--repeats", type=int, default=None, help="repeats per figure (default 7, quick 3)"
    )
    p.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), metavar="SECTION",
                   help=f"run only these sections: {', '.join(SECTIONS)}")  # fmt: skip
    p.add_argument("--browser", type=Path, default=Path(__file__).parent / "browser.json",
                   help="JSON with browser figures (written by python -m bench.browser)")  # fmt: skip
    p.add_argument("--browser-run", action="store_true",
                   help="measure the browser figures now (else only when the JSON is missing)")  # fmt: skip
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (default: torch's choice); 1 steadies a busy machine",
    )
    p.add_argument("--json", type=Path, help="also write every figure as JSON here")
    p.add_argument("--out", type=Path, help="also write the markdown here")
    p.add_argument("--render", type=Path, metavar="JSON",
                   help="measure nothing: print the report of a run saved with --json")  # fmt: skip
    p.add_argument("--summary", action="store_true",
                   help="print only the machine, the goals and one line per probed model "
                   "(what docs/benchmarks.md shows)")  # fmt: skip
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.render:
        res = saved.from_json(json.loads(args.render.read_text()))
        print(probe_summary(res) if args.summary else render(res))
        return 0
    repeats = args.repeats or (3 if args.quick else 7)
    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)
    res = Results(machine=machine())
    started = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f}s] {msg}", file=sys.stderr, flush=True)

    need_synth = {"walk", "probe"} & set(args.only)
    synth10 = models.synthetic(10_000).eval() if need_synth else None
    llama = real.llama_70b() if need_synth else None
    if "walk" in args.only:
        log("building the 100k-module model")
        synth100 = models.synthetic(100_000).eval()
        walk_models = {
            "synthetic 10k": synth10,
            "Llama-70B (transformers, meta)": llama,
            "synthetic 100k": synth100,
            "lookalike: Llama-70B (demo, meta)": models.llama_70b(),
        }
        for name, model in walk_models.items():
            log(f"walk: {name}")
            # treescope renders everything eagerly: ~3 min for 100k modules on a laptop-class CPU.
            budget = 0.0 if name == "synthetic 100k" else 20.0
            if args.quick and name == "synthetic 100k":
                budget = -1.0
            suites.walk_suite(res, {name: model}, repeats, treescope_budget=budget)  # type: ignore[dict-item]
        del synth100, walk_models
    if "probe" in args.only:
        img = suites.fresh_inputs("image")
        # (name, build, inputs, also run for real); each model is built when its turn comes and
        # dropped after, so the run never holds them all.
        cases: list[tuple[str, Any, Any, bool]] = [
            ("Llama-70B (transformers, meta)", lambda: llama, _meta_tokens, False),
            ("Mixtral-8x7B (transformers, meta)", real.mixtral_8x7b, _meta_tokens, False),
            ("ResNet-50 (timm)", real.resnet50, lambda m: img, True),
            ("ConvNeXt-T (timm)", real.convnext_tiny, lambda m: img, True),
            ("ViT-B/16 (timm)", real.vit_b16, lambda m: img, True),
            ("Llama 87M (transformers, CPU)", real.llama_cpu, real.tokens, True),
            ("GPT-2 124M (transformers)", real.gpt2, real.tokens, True),
            ("BERT-base (transformers)", real.bert, real.tokens, True),
            ("Mixtral 8 experts (transformers, CPU)", real.mixtral_cpu, real.tokens, True),
            ("synthetic 10k", lambda: synth10, lambda m: suites.fresh_inputs("synthetic"), True),
            ("lookalike: ResNet-50", lambda: models.resnet50().eval(), lambda m: img, True),
            ("lookalike: ViT-B/16", lambda: models.vit_b16().eval(), lambda m: img, True),
            ("lookalike: Llama-70B (demo, meta)", models.llama_70b,
             lambda m: suites.fresh_inputs("tokens-meta"), False),
        ]  # fmt: skip
        for name, make, inputs, run_real in cases:
            log(f"probe: {name}")
            model = make()
            suites.probe_suite(res, [(name, model, inputs(model), run_real)], repeats)
            del model
    if "edit" in args.only:
        log("edit: ResNet-50 (timm)")
        suites.edit_suite(
            res, "ResNet-50 (timm)", real.resnet50(), suites.fresh_inputs("image"), repeats
        )
        # Apply on ConvNeXt and GPT-2: a small edit that keeps every shape.
        log("edit: ConvNeXt-T (timm), GPT-2 (transformers)")
        suites.edit_suite(
            res,
            "ConvNeXt-T (timm)",
            real.convnext_tiny(),
            suites.fresh_inputs("image"),
            repeats,
            "stages.0.blocks.0.norm",
            {"eps": 1e-5},
        )
        gpt2 = real.gpt2()
        suites.edit_suite(res, "GPT-2 (transformers)", gpt2, real.tokens(gpt2), repeats,
                          "transformer.h.0.ln_1", {"eps": 1e-6})  # fmt: skip
    if "sizes" in args.only:
        suites.size_suite(res)
    if "browser" in args.only:
        if args.browser_run or not args.browser.exists():
            log("browser: headless Chromium (python -m bench.browser)")
            from bench import browser  # needs playwright and JupyterLab: only imported when run

            try:
                browser.run([10_000, 100_000], 3, 2000, args.browser)
            except Exception as e:  # a broken browser run leaves the goals "not measured"
                res.notes.append(f"browser run failed: {type(e).__name__}: {e}"[:500])
        suites.browser_suite(res, args.browser)
        flows = args.browser.with_name("flows.json")
        if args.browser_run or not flows.exists():
            log("flows: JupyterLab + headless Chromium (python -m bench.flows)")
            from bench import flows as flow_bench  # needs playwright and JupyterLab

            try:
                flow_bench.run(3, flows)
            except Exception as e:  # a broken run leaves the goals "not measured"
                res.notes.append(f"flows run failed: {type(e).__name__}: {e}"[:500])
        suites.flows_suite(res, flows)
    if "gpu" in args.only:
        gpu_suite(res, repeats)
    log("done")
    text = probe_summary(res) if args.summary else render(res)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(saved.to_json(res), indent=1))
    return 0


def _meta_tokens(model: torch.nn.Module) -> tuple[torch.Tensor]:
    return real.tokens(model, device="meta")


if __name__ == "__main__":
    sys.exit(main())
