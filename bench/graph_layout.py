"""The Graph tab's cost for a 12-block GPT-2 (goal: DOT + layout <= 1 s).

`python -m bench.graph_layout [--repeats 7]`. Builds a GPT-2 with 12 blocks from a small config
(random weights, no download), runs the Explorer's fake probe, and times:

- kernel: the "graph" request through `Session.handle` (the subtree's edges mapped to its
  children, folds, DOT text), per view below;
- browser: `@viz-js/viz`'s `renderSVGElement(dot)` in headless Chromium, the same renderer and
  bundle (`src/torchxray/static/viz.js`) the widget loads, after one untimed warm-up; the first
  render (WASM instance made) is shown apart.

Views: the model (`""`), `transformer`, `transformer.h` with its 12 blocks folded into one node,
the same with them expanded, and one block (`transformer.h.0`). Each figure is the median of
`--repeats` runs ("kernel, first": the first request of a view, untimed in the median); "total"
adds the kernel's and the browser's medians. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
VIEWS: list[tuple[str, list[str]]] = [
    ("", []),
    ("transformer", []),
    ("transformer.h", []),
    ("transformer.h", ["transformer.h.0"]),
    ("transformer.h.0", []),
]

_RENDER = """async ([code, dots, repeats]) => {
  const url = URL.createObjectURL(new Blob([code], {type: 'text/javascript'}));
  const t0 = performance.now();
  const viz = await (await import(url)).instance();
  const first = viz.renderSVGElement(dots[0]);
  const instance = performance.now() - t0;
  const out = [];
  for (const dot of dots) {
    viz.renderSVGElement(dot);  // warm-up
    const times = [];
    for (let i = 0; i < repeats; i++) {
      const t = performance.now();
      const svg = viz.renderSVGElement(dot);
      document.body.replaceChildren(svg);  // inserted, as the pane does
      times.push(performance.now() - t);
    }
    out.push(times);
  }
  return {instance, first: first.querySelectorAll('g.node').length, times: out};
}"""


def _gpt2() -> tuple[Any, dict[str, Any]]:
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(
        vocab_size=128, n_embd=64, n_layer=12, n_head=4, n_positions=64, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
    return model, {"input_ids": ids}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from torchxray._view.session import Session

    model, kwargs = _gpt2()
    session = Session(model, (), kwargs)
    session.run_probe()
    rows: list[dict[str, Any]] = []
    for path, open_ in VIEWS:
        msg = {"kind": "graph", "path": path, "open": open_}
        t = time.perf_counter()
        session.handle(msg)  # warm-up (the first asks build the records it reads)
        cold = (time.perf_counter() - t) * 1e3
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            reply, _ = session.handle(msg)
            times.append((time.perf_counter() - t) * 1e3)
        assert reply["kind"] == "graph", reply
        label = (path or "(model)") + (" expanded" if open_ else "")
        rows.append({"view": label, "dot": reply["dot"], "kernel": statistics.median(times)})
        rows[-1]["cold"] = cold
        rows[-1]["nodes"] = len(reply["nodes"])
        rows[-1]["edges"] = reply["edges"]
    code = (ROOT / "src" / "torchxray" / "static" / "viz.js").read_text(encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page()
        page.goto("about:blank")
        got = page.evaluate(_RENDER, [code, [r["dot"] for r in rows], args.repeats])
        browser.close()
    print(f"GPT-2, 12 blocks; median of {args.repeats}; renderer instance + first render "
          f"{got['instance']:.0f} ms\n")  # fmt: skip
    print(
        "| view | nodes | edges | kernel, first (ms) | kernel (ms) | layout in browser (ms) | total (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for row, times in zip(rows, got["times"], strict=True):
        layout = statistics.median(times)
        total = row["kernel"] + layout
        worst = max(worst, total)
        print(f"| {row['view']} | {row['nodes']} | {row['edges']} | {row['cold']:.1f} | {row['kernel']:.1f} | "
              f"{layout:.1f} | {total:.1f} |")  # fmt: skip
    print(f"\nworst view: {worst:.0f} ms (goal <= 1000 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
