"""Tree first paint, scroll frame time and DOM rows in headless Chromium; writes bench/browser.json.

`python -m bench.browser [--sizes 10000 100000] [--repeats 3]`. Starts a throwaway JupyterLab (the
UI tests' `Lab`), builds `torchxray.demo.many_modules(n)` in one cell and re-runs a second cell
`tx.explore(model, x)` a few times, measuring in the page:

- first paint: from the moment the widget's view exists (its `.tx-root` is inserted, i.e. the
  state has arrived and `render` ran) until the first `role=treeitem` row of that view is painted
  (the frame after insertion: requestAnimationFrame, then a task after that frame's paint);
- run cell -> tree visible: from the keypress that runs the cell to that paint, explained by the
  kernel side (`tx.explore()` inside the cell, which walks, probes and opens the comm with the
  state; printed by the cell) plus transport and first paint;
- scroll: once the last view's probe is done, the tree's viewport scrolled by one step per
  animation frame for ~2 s; the frame intervals (median, p95) and the synchronous JS cost of
  each step (scroll handler + layout);
- DOM rows: the most `role=treeitem` elements seen in the view at any time;
- "more": the root's "more" row clicked (the next 200 of its children) until those rows are
  painted, each click followed by its anchor, a collapsed two-row stage opened the same way (the
  same round trip to the kernel and re-render, for a page of two rows): medians of ten of each.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from lab import Lab, code_cells, errors, open_notebook, run_cell  # noqa: E402
from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
OUT = Path(__file__).with_name("browser.json")

# Installed before the cell runs: watches for the new view and its first row.
_WATCH = """() => {
  const seen = new Set(document.querySelectorAll('.tx-root'));
  const w = {run: performance.now(), view: null, row: null, paint: null, maxRows: 0};
  window.__txb = w;
  const obs = new MutationObserver(() => {
    if (w.view === null) {
      const root = [...document.querySelectorAll('.tx-root')].find((r) => !seen.has(r));
      if (!root) return;
      w.view = performance.now();
      w.root = root;
    }
    const rows = w.root.querySelectorAll('[role=treeitem]').length;
    w.maxRows = Math.max(w.maxRows, rows);
    if (w.row === null && rows > 0) {
      w.row = performance.now();
      // rAF runs before the frame's paint; a message posted from it runs after that paint.
      requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => { w.paint = performance.now(); obs.disconnect(); };
        ch.port2.postMessage(0);
      });
    }
  });
  obs.observe(document.body, {childList: true, subtree: true});
}"""

_SCROLL = """async (ms) => {
  const root = [...document.querySelectorAll('.tx-root')].pop();
  const vp = root.querySelector('.tx-viewport');
  const tree = root.querySelector('[role=tree]');
  vp.scrollTop = 0;
  const frames = [], work = [];
  let maxRows = tree.querySelectorAll('[role=treeitem]').length;
  const step = Math.max(1, Math.round(vp.clientHeight / 3));
  await new Promise((done) => {
    let last = null; const end = performance.now() + ms;
    const tick = (t) => {
      if (last !== null) frames.push(t - last);
      last = t;
      const t0 = performance.now();
      if (vp.scrollTop + vp.clientHeight >= vp.scrollHeight - 1) vp.scrollTop = 0;
      else vp.scrollTop += step;
      vp.dispatchEvent(new Event('scroll'));  // render now, so its cost is timed here
      void tree.offsetHeight;  // and the layout it causes
      work.push(performance.now() - t0);
      maxRows = Math.max(maxRows, tree.querySelectorAll('[role=treeitem]').length);
      if (t < end) requestAnimationFrame(tick); else done();
    };
    requestAnimationFrame(tick);
  });
  return {frames, work, maxRows, height: vp.scrollHeight, step};
}"""


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


# One click on a row's handler until the rows it brought are painted (the tree's viewport grew,
# then the frame after that): what a person waits for.
_CLICK_UNTIL_GROWN = """([el, vp, h]) => new Promise((done) => {
  const t0 = performance.now();
  el.click();
  const poll = () => {
    if (vp.scrollHeight > h) requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
    else setTimeout(poll, 2);
  };
  poll();
})"""


def load_more(page: Page, pages: int) -> tuple[int, list[float], list[float]]:
    """Clicks the root's "more" row `pages` times, so the scroll crosses thousands of rows; returns
    the rows loaded and, per page, the seconds from the click to the new rows painted, and those
    of the anchor measured after it: opening a collapsed two-row stage (the same round trip to the
    kernel and the same re-render, for a page of two rows), closed again untimed."""
    root = page.locator(".tx-root").last
    vp = root.locator(".tx-viewport")
    more_s: list[float] = []
    open_s: list[float] = []
    for _ in range(pages):
        height = vp.evaluate("(v) => { v.scrollTop = v.scrollHeight; return v.scrollHeight; }")
        more = root.locator(".tx-more").last
        try:  # the scroll renders the bottom rows on its event, a moment later
            more.wait_for(timeout=5_000)
        except PlaywrightTimeout:
            break  # everything is loaded
        # Not more.click(): its actionability checks scroll the row into view, which re-renders
        # the virtual rows (as does the background probe's tree state), and the click could chase
        # a replaced element until its timeout (seen in 2 of 4 runs). The row's own handler runs.
        ms = page.evaluate(_CLICK_UNTIL_GROWN, [more.element_handle(), vp.element_handle(), height])
        more_s.append(ms / 1000)
        # The anchor: the last closed stage in view, opened (its caret's handler) and closed.
        stage = root.locator("[role=treeitem][aria-expanded=false][aria-level='2']").last
        if stage.count():
            height = vp.evaluate("(v) => v.scrollHeight")
            caret = stage.locator(".tx-caret")
            ms = page.evaluate(
                _CLICK_UNTIL_GROWN, [caret.element_handle(), vp.element_handle(), height]
            )
            open_s.append(ms / 1000)
            root.locator(
                "[role=treeitem][aria-expanded=true][aria-level='2'] .tx-caret"
            ).last.evaluate("(e) => e.click()")
    rows: int = vp.evaluate("(v) => Math.round(v.scrollHeight / 22)")  # ROW_HEIGHT in js/tree.ts
    return rows, more_s, open_s


def measure(
    page: Page, lab: Lab, n: int, repeats: int, scroll_ms: int, more_pages: int = 10
) -> dict[str, Any]:
    name = lab.write_notebook(
        f"bench_{n}.ipynb",
        "import time, torch, torchxray as tx\nfrom torchxray.demo import many_modules\n"
        # The state comes with the view, so that first paint times the tree's drawing alone.
        "tx.Explorer.tree_after_view = False\n"
        f"model = many_modules({n}); x = torch.randn(2, 4)\n"
        "print(sum(1 for _ in model.modules()))",
        "t0 = time.perf_counter(); w = tx.explore(model, x)\n"
        "print(f'explore_s={time.perf_counter() - t0:.4f}'); w",
    )
    open_notebook(page, lab, name, f"bench{n}")
    modules = int(run_cell(page, 0, timeout=600_000).strip().splitlines()[-1])
    runs: list[dict[str, float]] = []
    max_rows = 0
    for i in range(repeats + 1):  # the first run warms imports and the JS bundle: not counted
        page.evaluate(_WATCH)
        out = run_cell(page, 1, timeout=600_000)
        page.wait_for_function("() => window.__txb.paint !== null", timeout=120_000)
        w = page.evaluate("() => { const w = window.__txb; delete w.root; return w; }")
        if errors(page):
            raise RuntimeError(errors(page)[0][-2000:])
        explore_s = float(out.split("explore_s=")[1].split()[0])
        max_rows = max(max_rows, int(w["maxRows"]))
        run = {
            "first_paint_s": (w["paint"] - w["view"]) / 1000,
            "total_s": (w["paint"] - w["run"]) / 1000,
            "kernel_explore_s": explore_s,
        }
        print(f"  {n}: run {i}: {run}", file=sys.stderr, flush=True)
        if i:
            runs.append(run)
    # Scroll a settled view: the background probes of the runs above would re-send the tree
    # (resetting the loaded pages) and compete with the scroll for the kernel.
    status = page.locator(".tx-root").last.get_by_role("status")
    expect(status).to_have_text(re.compile(r"^probe (ok|failed)"), timeout=300_000)
    loaded, more_s, open_s = load_more(page, more_pages)
    sc = page.evaluate(_SCROLL, scroll_ms)
    max_rows = max(max_rows, int(sc["maxRows"]))
    med = {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}
    return {
        "modules": modules,
        **med,
        "scroll_frame_ms": round(statistics.median(sc["frames"]), 2),
        "scroll_frame_p95_ms": round(_pct(sc["frames"], 0.95), 2),
        "scroll_work_ms": round(statistics.median(sc["work"]), 2),
        "scroll_work_p95_ms": round(_pct(sc["work"], 0.95), 2),
        "scroll_frames": len(sc["frames"]),
        "scroll_rows_loaded": loaded,
        "more_page_s": round(statistics.median(more_s), 4) if more_s else None,
        "more_pages": len(more_s),
        "open_stage_s": round(statistics.median(open_s), 4) if open_s else None,
        "dom_rows": max_rows,
        "cells": len(code_cells(page).all()),
    }


def machine() -> str:
    from bench.machine import machine as bench_machine

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        version = b.version
        b.close()
    return f"{bench_machine()}; headless Chromium {version} ({platform.machine()})"


def run(sizes: list[int], repeats: int, scroll_ms: int, out: Path = OUT) -> dict[str, Any]:
    lab = Lab(Path(tempfile.mkdtemp(prefix="torchxray-bench-lab-")))
    lab.start()
    results: dict[str, dict[str, Any]] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for n in sizes:
                    print(f"browser: {n} modules", file=sys.stderr, flush=True)
                    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = ctx.new_page()
                    page.set_default_timeout(120_000)
                    try:
                        results[str(n)] = measure(page, lab, n, repeats, scroll_ms)
                    finally:
                        ctx.close()
                        lab.shutdown_kernels()
            finally:
                browser.close()
    finally:
        lab.stop()
    data: dict[str, Any] = {
        key: {n: r[key] for n, r in results.items()}
        for key in ("first_paint_s", "scroll_frame_ms", "dom_rows", "more_page_s", "open_stage_s")
    }
    data["details"] = results
    data["how"] = (
        f"median of {repeats} re-runs of the explore cell after one warm-up; first paint = view "
        "inserted -> first treeitem painted; total_s = cell run keypress -> that paint; "
        f"scroll = after loading 10 more pages of the root's children, one step (1/3 of the "
        f"viewport) per animation frame for {scroll_ms} ms; more_page_s = median of those 10 "
        "clicks on the root's 'more' row (200 rows) -> rows painted, each followed by its anchor "
        "open_stage_s: a collapsed two-row stage opened (same round trip and re-render)"
    )
    data["machine"] = machine()
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.browser", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scroll-ms", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    data = run(args.sizes, args.repeats, args.scroll_ms, args.out)
    print(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
