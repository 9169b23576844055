"""The end-to-end figures (cell run -> tree visible, Apply -> re-probed tree); writes bench/flows.json.

`python -m bench.flows [--repeats 3] [--skip-browser]`. In headless Chromium with a throwaway
JupyterLab (the UI tests' `Lab`, as `bench/browser.py`):

- **cell run -> tree visible** and **cell run -> probe shown**: a cell `tx.explore(model, x)` is
  re-run; from the keypress that runs it to the paint of the new view's first tree row, and to
  the moment its status reads "probe ok" / "probe failed" (the probe runs in the background in a
  kernel). Models: the synthetic 100k-module model (`bench.models.synthetic`) and transformers'
  Llama with the Llama-3-70B architecture on meta (`bench.real.llama_70b`). Also: when the view
  (still without its tree) appeared, and the kernel's own shares, printed by the cell:
  `tx.explore()` returning, and `display(ex)` (in a kernel the walk and the first tree state are
  sent after the view, so the browser draws the view meanwhile).
- **Apply -> re-probed tree**: in the Form tab of a selected module, a field is changed and Apply
  clicked; from the click to the paint after the status reads "probe ok" again (having read
  "probe running after apply" or "probing" in between: Apply's probe runs in the background).
  Models: the synthetic 100k-module model (a LayerNorm's eps deep inside), timm `convnext_tiny`
  (`head.fc` out_features) and a 4-layer GPT-2 (`transformer.h.3.mlp.dropout` p). Anchor: the
  fake probe of the same model in the same kernel (`tx.probe`).

And in this process, without a browser: **memory held by an open explorer** on the 100k model
(`tx.explore(model, x)`, probe done): tracemalloc's traced bytes and the RSS before, while open, and
after `ex.close()` + `gc.collect()`.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).with_name("flows.json")

# Watches the next new view: its first painted tree row, and its status reading a probe result.
_WATCH = """() => {
  const seen = new Set(document.querySelectorAll('.tx-root'));
  const w = {run: performance.now(), view: null, paint: null, probe: null};
  window.__txf = w;
  const afterPaint = (key) => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { if (w[key] === null) w[key] = performance.now(); };
    ch.port2.postMessage(0);
  });
  let rowSeen = false, probeSeen = false;
  const obs = new MutationObserver(() => {
    if (w.view === null) {
      const root = [...document.querySelectorAll('.tx-root')].find((r) => !seen.has(r));
      if (!root) return;
      w.view = performance.now();
      w.root = root;
    }
    if (!rowSeen && w.root.querySelector('[role=treeitem]')) { rowSeen = true; afterPaint('paint'); }
    const status = w.root.querySelector('[role=status]');
    if (!probeSeen && status && /^probe (ok|failed)/.test(status.textContent || '')) {
      probeSeen = true; afterPaint('probe');
    }
    if (rowSeen && probeSeen) obs.disconnect();
  });
  obs.observe(document.body, {childList: true, subtree: true, characterData: true});
}"""

# Watches the last view from the click on Apply to its re-probed tree.
_APPLY = """() => {
  const root = [...document.querySelectorAll('.tx-root')].pop();
  const status = root.querySelector('[role=status]');
  const w = {click: null, probing: false, done: null, paint: null};
  window.__txa = w;
  root.addEventListener('click', (e) => {
    const b = e.target.closest('button');
    if (w.click === null && b && b.textContent.trim() === 'Apply') w.click = performance.now();
  }, true);
  // Every text the status took since the click counts, even one replaced in the same task.
  const probing = (t) => /^(probing|probe running)/.test(t || '');
  const obs = new MutationObserver((records) => {
    if (w.click === null) return;
    const text = status.textContent || '';
    if (probing(text)) w.probing = true;
    for (const r of records) {
      if (!status.contains(r.target)) continue;
      if (r.type === 'characterData' && probing(r.target.data)) w.probing = true;
      for (const n of r.addedNodes) if (probing(n.textContent)) w.probing = true;
    }
    if (w.probing && w.done === null && /^probe ok/.test(text)
        && root.getAttribute('aria-busy') === 'false') {
      w.done = performance.now();
      obs.disconnect();
      requestAnimationFrame(() => {
        const ch = new MessageChannel();
        ch.port1.onmessage = () => { w.paint = performance.now(); };
        ch.port2.postMessage(0);
      });
    }
  });
  obs.observe(root, {childList: true, subtree: true, characterData: true, attributes: true});
}"""

_PATH = f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"

EXPLORE_MODELS = {
    "synthetic 100k": (
        "from bench.models import synthetic\nmodel = synthetic(100_000); args = (torch.randn(4, 8),)"
    ),
    "Llama-70B (transformers, meta)": (
        "from bench import real\nmodel = real.llama_70b(); args = real.tokens(model, 'meta')"
    ),
}

APPLY_MODELS = {
    "synthetic 100k": (
        "from bench.models import synthetic\nmodel = synthetic(100_000); args = (torch.randn(4, 8),)",
        "stages.500.3.norm",
        "eps",
        ("0.001", "0.0001"),
    ),
    "ConvNeXt-T (timm)": (
        "from bench import real\nmodel = real.convnext_tiny(); args = (torch.randn(1, 3, 224, 224),)",
        "head.fc",
        "out_features",
        ("10", "11"),
    ),
    "GPT-2, 4 layers (transformers)": (
        "from bench import real\nmodel = real._hf('GPT2Config', 'GPT2LMHeadModel', n_layer=4)\n"
        "args = real.tokens(model)",
        "transformer.h.3.mlp.dropout",
        "p",
        ("0.2", "0.3"),
    ),
}


def _median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: round(statistics.median(r[k] for r in runs), 4) for k in runs[0]}


def explore_flow(page: Any, lab: Any, key: str, setup: str, repeats: int) -> dict[str, Any]:
    from lab import errors, open_notebook, run_cell

    name = lab.write_notebook(
        f"flow_{abs(hash(key))}.ipynb",
        "import time, torch, torchxray as tx\n" + _PATH + setup,
        "from IPython.display import display\n"
        "t0 = time.perf_counter(); ex = tx.explore(model, *args); t1 = time.perf_counter()\n"
        "display(ex); t2 = time.perf_counter()\n"
        "print(f'explore_s={t1 - t0:.4f} display_s={t2 - t1:.4f}')",
    )
    open_notebook(page, lab, name, f"flow{abs(hash(key))}")
    run_cell(page, 0, timeout=600_000)
    runs = []
    for i in range(repeats + 1):  # the first run warms imports and the JS bundle: not counted
        page.evaluate(_WATCH)
        out = run_cell(page, 1, timeout=600_000)
        page.wait_for_function(
            "() => window.__txf.paint !== null && window.__txf.probe !== null", timeout=600_000
        )
        w = page.evaluate("() => { const w = window.__txf; delete w.root; return w; }")
        if errors(page):
            raise RuntimeError(errors(page)[0][-2000:])
        run = {
            "tree_visible_s": (w["paint"] - w["run"]) / 1000,
            "probe_shown_s": (w["probe"] - w["run"]) / 1000,
            "view_s": (w["view"] - w["run"]) / 1000,
            "kernel_explore_s": float(out.split("explore_s=")[1].split()[0]),
            "kernel_display_s": float(out.split("display_s=")[1].split()[0]),
        }
        print(f"  {key}: run {i}: {run}", file=sys.stderr, flush=True)
        if i:
            runs.append(run)
    return {**_median(runs), "runs": runs}


def apply_flow(
    page: Any, lab: Any, key: str, spec: tuple[str, str, str, tuple[str, str]], repeats: int
) -> dict[str, Any]:
    from lab import errors, open_notebook, run_cell

    setup, path, field, values = spec
    name = lab.write_notebook(
        f"apply_{abs(hash(key))}.ipynb",
        "import time, torch, torchxray as tx\n" + _PATH + setup + "\n"
        "tx.probe(model, *args)\nts = []\n"
        "for _ in range(5):\n"
        "    t0 = time.perf_counter(); tx.probe(model, *args); ts.append(time.perf_counter() - t0)\n"
        "print(f'probe_s={sorted(ts)[2]:.4f}')",
        f"ex = tx.explore(model, *args); ex.wait(); ex.select({path!r}); ex",
    )
    open_notebook(page, lab, name, f"apply{abs(hash(key))}")
    probe_s = float(run_cell(page, 0, timeout=600_000).split("probe_s=")[1].split()[0])
    run_cell(page, 1, timeout=600_000)
    root = page.locator(".tx-root").last
    root.get_by_role("tab", name="Form").click()
    box = root.get_by_label(field, exact=True)
    runs = []
    alert = root.locator(".tx-alert")
    for i in range(repeats + 1):  # the first Apply warms the form and patch code: not counted
        # The last Apply's tree state re-renders the form: a value typed before it lands is
        # lost ("nothing to apply"), so each run starts from an idle widget.
        page.wait_for_function(
            "() => [...document.querySelectorAll('.tx-root')].pop()"
            ".getAttribute('aria-busy') === 'false'",
            timeout=600_000,
        )
        box.fill(values[i % 2])
        page.evaluate(_APPLY)
        root.get_by_role("button", name="Apply").click()
        page.wait_for_function("() => window.__txa.paint !== null", timeout=600_000)
        w = page.evaluate("() => window.__txa")
        if errors(page):
            raise RuntimeError(errors(page)[0][-2000:])
        if alert.is_visible():  # a refused edit is no figure of an Apply
            raise RuntimeError(f"Apply {i} did not apply: {alert.inner_text()[:300]}")
        run = {"apply_s": (w["paint"] - w["click"]) / 1000}
        print(f"  {key}: apply {i}: {run}", file=sys.stderr, flush=True)
        if i:
            runs.append(run)
    return {**_median(runs), "fake_probe_s": probe_s, "edit": f"{path}.{field}", "runs": runs}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def memory_open(n: int = 100_000) -> dict[str, Any]:
    """Bytes held by an open explorer (probe done) on the n-module model, and after close + gc."""
    import torch

    import torchxray as tx
    from bench.models import synthetic

    model, x = synthetic(n), torch.randn(4, 8)
    tx.explore(model, x).close()  # imports and caches first
    gc.collect()
    rss0 = _rss()
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    ex = tx.explore(model, x)
    ex.wait()
    ex.get_state()
    gc.collect()
    held, rss1 = tracemalloc.get_traced_memory()[0] - before, _rss()
    ex.close()
    del ex
    gc.collect()
    left, rss2 = tracemalloc.get_traced_memory()[0] - before, _rss()
    tracemalloc.stop()
    return {
        "held_bytes": held,
        "after_close_bytes": left,
        "rss_held_bytes": rss1 - rss0,
        "rss_after_close_bytes": rss2 - rss0,
        "how": "tracemalloc traced bytes (and RSS) after tx.explore(model, x) + wait + get_state, "
        "then after ex.close() + gc.collect(); RSS rarely shrinks (the allocator keeps pages)",
    }


def run(
    repeats: int,
    out: Path = OUT,
    browser: bool = True,
    only: str = "",
    settings: tuple[str, ...] = (),
) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if only in ("", "memory"):
        data["memory"] = memory_open()
        print(f"memory: {data['memory']}", file=sys.stderr, flush=True)
    if browser and only != "memory":
        data.update(_browser(repeats, only, settings))
    if settings:
        data["settings"] = list(settings)
    from bench.machine import machine

    data["machine"] = machine()
    data["how"] = f"median of {repeats} runs after one warm-up, in one JupyterLab + Chromium"
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def _browser(repeats: int, only: str = "", settings: tuple[str, ...] = ()) -> dict[str, Any]:
    from bench.browser import CHROMIUM, CHROMIUM_ARGS  # puts tests/ui on sys.path

    # isort: split
    from lab import Lab
    from playwright.sync_api import sync_playwright

    lab = Lab(Path(tempfile.mkdtemp(prefix="torchxray-bench-flows-")))
    lab.start()
    explore: dict[str, Any] = {}
    apply: dict[str, Any] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                # The A/B switches: Explorer class settings, e.g. outline_from=10**9.
                pre = "".join(f"tx.Explorer.{s}\n" for s in settings)
                jobs: list[tuple[dict[str, Any], str, Any]] = [
                    *((explore, k, lambda pg, k=k, s=s: explore_flow(pg, lab, k, pre + s, repeats))
                      for k, s in EXPLORE_MODELS.items() if only in ("", "explore")),
                    *((apply, k, lambda pg, k=k, s=s: apply_flow(pg, lab, k, s, repeats))
                      for k, s in APPLY_MODELS.items() if only in ("", "apply")),
                ]  # fmt: skip
                for into, key, job in jobs:
                    print(f"flows: {key}", file=sys.stderr, flush=True)
                    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = ctx.new_page()
                    page.set_default_timeout(120_000)
                    t0 = time.perf_counter()
                    try:
                        into[key] = job(page)
                    except Exception as e:  # one failed flow is a failed figure, not a lost run
                        into[key] = {"error": f"{type(e).__name__}: {e}"[:500]}
                    finally:
                        ctx.close()
                        lab.shutdown_kernels()
                    print(f"  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
            finally:
                browser.close()
    finally:
        lab.stop()
    return {"explore": explore, "apply": apply}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.flows", description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--skip-browser", action="store_true", help="the memory figure only")
    ap.add_argument("--only", choices=["explore", "apply", "memory"], default="")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="A/B: an Explorer class setting for the flows, e.g. outline_from=10**9 or "
        "tree_after_view=False (repeatable)",
    )
    args = ap.parse_args(argv)
    from torchxray.widget import Explorer

    for s in args.set:
        name = s.partition("=")[0].strip()
        if "=" not in s or not name.isidentifier() or not hasattr(Explorer, name):
            ap.error(f"--set takes NAME=VALUE, NAME a tx.Explorer class setting; got {s!r}")
    settings = tuple(args.set)
    data = run(args.repeats, args.out, not args.skip_browser, args.only, settings)
    print(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
