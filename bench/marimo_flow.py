"""Cell run -> tree visible in marimo (`marimo edit`, headless Chromium): the figure `bench/flows.py`
measures in JupyterLab, measured the same way where no Jupyter kernel runs.

`python -m bench.marimo_flow [--repeats 3] [--modules 100000] [--out PATH]`. A throwaway `marimo
edit` server (the UI tests' `tests/ui/mo_server.py`) opens a notebook of two cells: the synthetic
model (`bench.models.synthetic`) and `ex = tx.explore(model, x); ex`. The second cell is re-run
from its editor (Ctrl+Enter), timed from the keypress to the paint of the new view's first tree
row (*tree visible*), and to its status reading "probe ok" / "probe failed" (*probe shown*); also
when the new view appeared (*view*) and the kernel's share, `tx.explore()` in the cell
(*kernel explore*, written by the cell). Median of `--repeats` runs after one warm-up. marimo
draws an anywidget inside a shadow root (`marimo-anywidget`): the watcher polls those once per
animation frame, where `bench/flows.py` observes mutations of the document.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).with_name("marimo_flow.json")

# Polls the shadow roots of marimo's widget hosts each frame for a view not seen before, its
# first tree row (the paint is the task after the next animation frame, as in bench/flows.py)
# and its status reading a probe result.
_WATCH = """() => {
  const roots = () => [...document.querySelectorAll('marimo-anywidget')]
    .map((h) => h.shadowRoot && h.shadowRoot.querySelector('.tx-root')).filter(Boolean);
  const seen = new Set(roots());
  const w = {run: performance.now(), view: null, paint: null, probe: null};
  window.__txm = w;
  let root = null, rowSeen = false, probeSeen = false;
  const afterPaint = (key) => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { if (w[key] === null) w[key] = performance.now(); };
    ch.port2.postMessage(0);
  });
  const poll = () => {
    if (root === null) {
      root = roots().find((r) => !seen.has(r)) || null;
      if (root !== null) w.view = performance.now();
    }
    if (root !== null) {
      if (!rowSeen && root.querySelector('[role=treeitem]')) { rowSeen = true; afterPaint('paint'); }
      const status = root.querySelector('[role=status]');
      if (!probeSeen && status && /^probe (ok|failed)/.test(status.textContent || '')) {
        probeSeen = true; afterPaint('probe');
      }
    }
    if (!(rowSeen && probeSeen)) requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}"""


def notebook(modules: int, log: Path) -> str:
    return textwrap.dedent(f"""\
        import marimo

        app = marimo.App(width="full")


        @app.cell
        def _():
            import sys
            import time

            import torch

            sys.path.insert(0, {str(ROOT)!r})
            import torchxray as tx
            from bench.models import synthetic

            model = synthetic({modules}); x = torch.randn(4, 8)
            return model, time, tx, x


        @app.cell
        def _(model, time, tx, x):
            t0 = time.perf_counter()
            ex = tx.explore(model, x)
            with open({str(log)!r}, "a") as f:
                f.write(f"{{time.perf_counter() - t0:.4f}}\\n")
            ex
            return (ex,)


        if __name__ == "__main__":
            app.run()
        """)


def run(repeats: int, modules: int, out: Path = OUT) -> dict[str, Any]:
    from bench.browser import CHROMIUM, CHROMIUM_ARGS  # puts tests/ui on sys.path

    # isort: split
    from mo_server import Marimo
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="torchxray-bench-marimo-"))
    log = work / "explore_s.txt"
    src = work / "flow.py"
    src.write_text(notebook(modules, log))
    runs: list[dict[str, float]] = []
    with Marimo(work / "server", notebook=src) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(600_000)
            page.goto(server.url)  # the notebook runs as it opens (mo_server's settings)
            page.wait_for_function(
                "() => [...document.querySelectorAll('marimo-anywidget')].some((h) => "
                "/^probe (ok|failed)/.test(h.shadowRoot?.querySelector('[role=status]')"
                "?.textContent || ''))"
            )
            editor = page.locator(".marimo-cell").nth(1).locator(".cm-content")
            for i in range(repeats + 1):  # the first re-run warms the code paths: not counted
                before = len(log.read_text().split()) if log.exists() else 0
                editor.click()
                page.evaluate(_WATCH)
                page.keyboard.press("Control+Enter")
                page.wait_for_function("() => window.__txm.paint !== null")
                page.wait_for_function("() => window.__txm.probe !== null")
                w = page.evaluate("() => window.__txm")
                shares = log.read_text().split()
                if len(shares) <= before:
                    raise RuntimeError("the cell did not run again")
                run = {
                    "tree_visible_s": (w["paint"] - w["run"]) / 1000,
                    "probe_shown_s": (w["probe"] - w["run"]) / 1000,
                    "view_s": (w["view"] - w["run"]) / 1000,
                    "kernel_explore_s": float(shares[-1]),
                }
                print(f"  marimo {modules}: run {i}: {run}", file=sys.stderr, flush=True)
                if i:
                    runs.append(run)
        finally:
            browser.close()
    from bench.machine import machine

    data = {
        **{k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]},
        "runs": runs,
        "modules": modules,
        "machine": machine(),
        "how": f"median of {repeats} runs after one warm-up, in one `marimo edit` + Chromium",
    }
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--modules", type=int, default=100_000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    data = run(args.repeats, args.modules, args.out)
    print(json.dumps({k: v for k, v in data.items() if k != "runs"}, indent=1))


if __name__ == "__main__":
    main()
