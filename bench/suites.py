"""The measurements. Each suite adds rows to `Results`; a torchxray part that is missing or broken
shows up as a failed figure in the table instead of stopping the run."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn

from . import anchors
from .report import Results, Row
from .timing import Timing, measure, measure_interleaved

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "src" / "torchxray" / "static"


def _walk(model: nn.Module) -> Any:
    from torchxray import walk

    return walk(model)


def _probe(
    model: nn.Module,
    args: tuple[Any, ...],
    mode: str,
    flops: bool | None = None,
    read_all: bool = False,
) -> Any:
    from torchxray import probe

    rep = probe(model, *args, mode=mode, flops=flops)
    if not rep.ok:  # a failed probe is not a fast probe: make it a failed figure
        err = rep.error
        raise RuntimeError(f"probe failed at {err.path!r}: {err.exc_type}: {err.message}")
    if read_all:  # records are made when first read: make every one of them
        for _record in rep.records.values():
            pass
    return rep


def _open(model: nn.Module) -> tuple[Any, dict[str, Any]]:
    """What a user waits for: build the explorer (walk included) and serialise its first state."""
    from torchxray import explore

    ex = explore(model)
    return ex, ex.get_state()


def _outline(model: nn.Module) -> Any:
    """A big model's first state in a kernel (`Explorer.outline_from`): the walk and its outline,
    rows without counts; the full state follows once the tensors are read."""
    from torchxray._view.session import Session

    return Session(model).outline_state()


def state_bytes(state: dict[str, Any]) -> int:
    """Bytes of the first comm message: JSON plus any binary buffers, as ipywidgets sends them."""
    from ipywidgets.widgets.widget import _remove_buffers

    plain, _paths, buffers = _remove_buffers(state)
    return len(json.dumps(plain, separators=(",", ":")).encode()) + sum(len(b) for b in buffers)


def _close(result: Any) -> None:
    ex = result[0] if isinstance(result, tuple) else result
    close = getattr(ex, "close", None)
    if close is not None:
        close()


def walk_suite(
    res: Results, models: dict[str, nn.Module], repeats: int, treescope_budget: float
) -> None:
    table = "Walk and open"
    for name, model in models.items():
        n = anchors.named_modules_loop(model)
        t = measure_interleaved(
            {
                "bare": lambda m=model: anchors.named_modules_loop(m),
                "walk": lambda m=model: _walk(m),
            },
            repeats,
        )
        bare, ours = t["bare"], t["walk"]
        res.add(Row(table, name, "walk", ours, "named_modules loop", bare, f"{n:,} modules"))
        if treescope_budget < 0:
            ts = Timing(error="skipped in --quick (minutes at this size)")
        else:
            ts = measure(lambda m=model: anchors.treescope_html(m), repeats, treescope_budget)
        res.add(Row(table, name, "walk", ours, "treescope.render_to_html", ts))
        opened = measure(lambda m=model: _open(m), repeats, after=_close)
        res.add(
            Row(
                table,
                name,
                "open explorer (walk + first state)",
                opened,
                "named_modules loop",
                bare,
            )
        )
        outlined = measure(lambda m=model: _outline(m), repeats)
        res.add(
            Row(table, name, "first rows (walk + outline)", outlined, "named_modules loop", bare)
        )
        if opened.ok:
            ex, state = _open(model)
            res.values[f"bytes:first state, {name}"] = state_bytes(state)
            _close(ex)


def probe_suite(
    res: Results, cases: list[tuple[str, nn.Module, tuple[Any, ...], bool]], repeats: int
) -> None:
    """cases: (name, model, example args, also run for real). The figures of one model are
    measured interleaved, so a ratio compares runs made moments apart. On a meta model the bare
    forward is a meta forward (named so in the table): shapes only, as the fake probe."""
    table = "Probe"
    for name, model, args, real in cases:
        meta = any(isinstance(a, torch.Tensor) and a.is_meta for a in args)
        bare_name = "bare meta forward" if meta else "bare forward"
        fns = {
            "bare": lambda m=model, a=args: anchors.bare_forward(m, *a),
            "info": lambda m=model, a=args: anchors.torchinfo_summary(m, *a),
            "fake": lambda m=model, a=args: _probe(m, a, "fake"),
        }
        if real:
            fns["real"] = lambda m=model, a=args: _probe(m, a, "real")
            fns["read"] = lambda m=model, a=args: _probe(m, a, "real", read_all=True)
            fns["flops"] = lambda m=model, a=args: _probe(m, a, "real", flops=True)
        t = measure_interleaved(fns, repeats, budget_s=120.0)
        res.add(Row(table, name, "probe (fake)", t["fake"], "torchinfo.summary", t["info"]))
        res.add(Row(table, name, "probe (fake)", t["fake"], bare_name, t["bare"]))
        if real:
            res.add(Row(table, name, "probe (real)", t["real"], bare_name, t["bare"]))
            res.add(Row(table, name, "probe (real)", t["real"], "torchinfo.summary", t["info"]))
            read, counted = "probe (real), every record read", "probe (real), flops=True"
            res.add(Row(table, name, read, t["read"], bare_name, t["bare"]))
            res.add(Row(table, name, counted, t["flops"], bare_name, t["bare"]))
        # The anchor against its own anchor: what torchinfo's hooks cost on this model.
        res.add(Row(table, name, "(anchor) torchinfo.summary", t["info"], bare_name, t["bare"]))


def edit_suite(
    res: Results,
    name: str,
    model: nn.Module,
    args: tuple[Any, ...],
    repeats: int,
    path: str = "layer1.0.conv2",
    changes: dict[str, Any] | None = None,
) -> None:
    """Edit one module (keeping shapes: a conv's bias by default) and re-probe in fake mode; the
    undo is not timed."""
    table = "Edit"
    edit = changes or {"bias": True}
    try:
        from torchxray import PatchLog

        log = PatchLog(model)
    except Exception as exc:
        res.add(
            Row(table, name, "edit + fake re-probe", Timing(error=f"{type(exc).__name__}: {exc}"))
        )
        return

    def round_trip() -> Any:
        log.edit(path, **edit)
        return _probe(model, args, "fake")

    def undo(_: Any) -> None:
        log.undo()

    fake = measure(lambda: _probe(model, args, "fake"), repeats, warmup=1)
    ours = measure(round_trip, repeats, after=undo, warmup=1)
    res.add(
        Row(table, name, "edit + fake re-probe", ours, "fake probe alone", fake, f"edit {path}")
    )
    if log.can_undo:  # a failed round trip may leave its edit applied
        log.undo()
    explorer_suite(res, name, model, args, path, repeats, fake, edit)


def explorer_suite(
    res: Results,
    name: str,
    model: nn.Module,
    args: tuple[Any, ...],
    path: str,
    repeats: int,
    fake: Timing,
    edit: dict[str, Any] | None = None,
) -> None:
    """The same round trip as a user gets it: Explorer.edit re-walks, re-probes and re-syncs."""
    try:
        from torchxray import explore

        ex = explore(model, *args)
    except Exception as exc:
        res.add(
            Row(
                "Edit",
                name,
                "explorer edit (+ walk, probe, state)",
                Timing(error=f"{type(exc).__name__}: {exc}"),
            )
        )
        return
    try:
        ours = measure(
            lambda: ex.edit(path, **(edit or {"bias": True})),
            repeats,
            after=lambda _: ex.undo(),
            warmup=1,
        )
        res.add(
            Row(
                "Edit", name, "explorer edit (+ walk, probe, state)", ours, "fake probe alone", fake
            )
        )
    finally:
        ex.close()


def size_suite(res: Results) -> None:
    bundle = STATIC / "widget.js"
    if bundle.exists():
        raw = bundle.read_bytes()
        res.values["bytes:widget.js (minified)"] = len(raw)
        res.values["bytes:widget.js (gzip)"] = len(gzip.compress(raw, 9))
    for extra in sorted(STATIC.glob("*")):
        if extra.is_file() and extra.name != "widget.js" and not extra.name.startswith("."):
            res.values[f"bytes:static/{extra.name}"] = extra.stat().st_size
    if bundle.exists():
        snapshot_page_sizes(res)


def snapshot_page_sizes(res: Results) -> None:
    """`ex.to_html()` of timm's efficientnet_b0 (224x224, fake probe): the page and each part it
    inlines, as carried (gzip + base64) and unpacked (issue 43 item 11: <= 1 MB)."""
    try:
        import timm

        from torchxray import explore
        from torchxray._view import assets
    except ImportError as e:
        res.notes.append(f"to_html sizes: not measured ({e})")
        return
    torch.manual_seed(0)
    ex = explore(timm.create_model("efficientnet_b0", pretrained=False).eval(),
                 torch.randn(1, 3, 224, 224))  # fmt: skip
    try:
        page = ex.to_html()
    finally:
        ex.close()
    for part, (carried, raw) in assets.page_parts(page).items():
        res.values[f"bytes:to_html efficientnet_b0: {part}"] = carried
        if part != "page":
            res.values[f"bytes:to_html efficientnet_b0: {part} (unpacked)"] = raw


def browser_suite(res: Results, path: Path) -> None:
    """Figures measured in headless Chromium by the UI tests (see bench/README.md for the format).

    Expected JSON: {"first_paint_s": {"10000": 0.12, "100000": 0.3}, "scroll_frame_ms": {...},
    "dom_rows": {...}, "machine": "..."}. Missing file: the browser goals read "not measured".
    """
    if not path.exists():
        res.notes.append(
            f"browser figures: {path.relative_to(ROOT)} not found (see bench/README.md)"
        )
        return
    data = json.loads(path.read_text())
    rows = [
        "### Browser (headless Chromium)",
        "",
        '| modules | first paint | scroll frame | DOM rows | "more" (200 rows) '
        "| anchor: open a 2-row stage | ratio |",
    ]
    rows.append("|---|---|---|---|---|---|---|")
    for n in sorted(
        {k for key in ("first_paint_s", "scroll_frame_ms", "dom_rows") for k in data.get(key, {})},
        key=int,
    ):
        paint = data.get("first_paint_s", {}).get(n)
        frame = data.get("scroll_frame_ms", {}).get(n)
        dom = data.get("dom_rows", {}).get(n)
        more = data.get("more_page_s", {}).get(n)
        stage = data.get("open_stage_s", {}).get(n)
        for key, value in (
            ("first_paint_s", paint),
            ("scroll_frame_ms", frame),
            ("dom_rows", dom),
            ("more_page_s", more),
        ):
            if value is not None:
                res.values[f"browser:{key}:{n}"] = float(value)
        ratio = f"{more / stage:.2f}x" if more and stage else "n/a"
        rows.append(
            f"| {int(n):,} | {'n/a' if paint is None else f'{paint * 1000:.0f} ms'} | "
            f"{'n/a' if frame is None else f'{frame:.1f} ms'} | {'n/a' if dom is None else dom} | "
            f"{'n/a' if more is None else f'{more * 1000:.0f} ms'} | "
            f"{'n/a' if stage is None else f'{stage * 1000:.0f} ms'} | {ratio} |"
        )
    if data.get("machine"):
        rows.append(f"\nMeasured on: {data['machine']}")
    res.sections.append("\n".join(rows) + "\n")


def flows_suite(res: Results, path: Path) -> None:
    """The end-to-end figures from `bench/flows.json` (written by `python -m bench.flows`):
    cell run -> tree visible / probe shown, Apply -> re-probed tree, memory of an open explorer."""
    if not path.exists():
        res.notes.append(
            f"flow figures: {path.relative_to(ROOT)} not found (python -m bench.flows)"
        )
        return
    data = json.loads(path.read_text())
    mb = 1024 * 1024
    rows = ["### End to end (JupyterLab + headless Chromium)", ""]
    explore, apply = data.get("explore", {}), data.get("apply", {})
    if explore:
        rows += ["| model | cell run -> view shown | cell run -> tree visible | cell run -> probe shown "
                 "| kernel: tx.explore() + display |",
                 "|---|---|---|---|---|"]  # fmt: skip
        for model, r in explore.items():
            if "error" in r:
                rows.append(f"| {model} | fails: {r['error'][:120]} | | | |")
                continue
            res.values[f"flows:tree_visible_s:{model}"] = r["tree_visible_s"]
            res.values[f"flows:probe_shown_s:{model}"] = r["probe_shown_s"]
            view = f"{r['view_s'] * 1000:.0f} ms" if "view_s" in r else "not measured"
            kernel = r["kernel_explore_s"] + r.get("kernel_display_s", 0.0)
            rows.append(f"| {model} | {view} | {r['tree_visible_s'] * 1000:.0f} ms | "
                        f"{r['probe_shown_s'] * 1000:.0f} ms | {kernel * 1000:.0f} ms |")  # fmt: skip
        rows.append("")
    if apply:
        rows += ["| model | edit | Apply -> re-probed tree | anchor: fake probe in the kernel |",
                 "|---|---|---|---|"]  # fmt: skip
        for model, r in apply.items():
            if "error" in r:
                rows.append(f"| {model} | | fails: {r['error'][:120]} | |")
                continue
            res.values[f"flows:apply_s:{model}"] = r["apply_s"]
            rows.append(f"| {model} | `{r['edit']}` | {r['apply_s'] * 1000:.0f} ms | "
                        f"{r['fake_probe_s'] * 1000:.0f} ms |")  # fmt: skip
        rows.append("")
    mem = data.get("memory")
    if mem:
        res.values["flows:memory_held_bytes"] = mem["held_bytes"]
        res.values["flows:memory_after_close_bytes"] = mem["after_close_bytes"]
        rows.append(
            f"Memory of an open explorer on 100k modules (probe done; tracemalloc): "
            f"{mem['held_bytes'] / mb:.1f} MB held, {mem['after_close_bytes'] / mb:.2f} MB left "
            f"after `ex.close()` + `gc.collect()` (RSS: +{mem['rss_held_bytes'] / mb:.0f} MB open, "
            f"+{mem['rss_after_close_bytes'] / mb:.0f} MB after close; the allocator keeps pages)."
        )
    if data.get("machine"):
        rows.append(f"\nMeasured on: {data['machine']}; {data.get('how', '')}")
    res.sections.append("\n".join(rows) + "\n")


def finite(x: float) -> bool:
    return not (math.isnan(x) or math.isinf(x))


def fresh_inputs(kind: str) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(0)
    if kind == "image":
        return (torch.randn(1, 3, 224, 224, generator=g),)
    if kind == "synthetic":
        return (torch.randn(4, 8, generator=g),)
    if kind == "tokens-meta":
        return (torch.zeros(1, 128, dtype=torch.long, device="meta"),)
    raise ValueError(kind)
