"""Collected figures, the markdown tables and the goals (with pass/fail) they are judged by."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from .timing import Timing, ms, ratio


@dataclass
class Row:
    table: str
    model: str
    figure: str
    ours: Timing
    anchor_name: str = ""
    anchor: Timing | None = None
    note: str = ""

    @property
    def ratio(self) -> float:
        return ratio(self.ours, self.anchor) if self.anchor is not None else float("nan")


@dataclass
class Results:
    machine: str = ""
    rows: list[Row] = field(default_factory=list)
    # Named scalars that are not timings: sizes in bytes, browser figures in seconds, ...
    values: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)  # extra markdown (GPU per-layer table)

    def add(self, row: Row) -> Row:
        self.rows.append(row)
        return row

    def row(self, model: str, figure: str, anchor_name: str = "") -> Row | None:
        for r in self.rows:
            if (
                r.model == model
                and r.figure == figure
                and (not anchor_name or r.anchor_name == anchor_name)
            ):
                return r
        return None


def _cell(t: Timing | None) -> str:
    if t is None:
        return ""
    if t.error:
        return f"fails: {t.error}"
    extra = f" (first {ms(t.first)}, n={len(t.runs)})" if len(t.runs) > 1 else " (n=1)"
    return ms(t.median) + extra


def _ratio(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:.2f}x"


def timing_tables(res: Results) -> str:
    out = []
    for table in dict.fromkeys(r.table for r in res.rows):
        out += [
            f"### {table}",
            "",
            "| model | figure | torchxray (median) | anchor | anchor (median) | ratio |",
        ]
        out.append("|---|---|---|---|---|---|")
        for r in (r for r in res.rows if r.table == table):
            note = f" — {r.note}" if r.note else ""
            out.append(
                f"| {r.model} | {r.figure}{note} | {_cell(r.ours)} | {r.anchor_name} | "
                f"{_cell(r.anchor)} | {_ratio(r.ratio)} |"
            )
        out.append("")
    return "\n".join(out)


def _kb(n: float) -> str:
    return "n/a" if math.isnan(n) else f"{n / 1024:.1f} KB"


def size_table(res: Results) -> str:
    rows = [(k, v) for k, v in res.values.items() if k.startswith("bytes:")]
    if not rows:
        return ""
    out = ["### Sizes", "", "| what | size |", "|---|---|"]
    out += [f"| {k.removeprefix('bytes:')} | {_kb(v)} |" for k, v in rows]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Goal:
    figure: str
    goal: str
    check: Callable[
        [Results], tuple[str, bool | None]
    ]  # (measured text, pass?) None = not measured


def _walk_100k(res: Results) -> tuple[str, bool | None]:
    r = res.row("synthetic 100k", "walk", "named_modules loop")
    if r is None or not r.ours.ok:
        return ("not measured" if r is None else _cell(r.ours), None)
    return f"{ms(r.ours.median)}, {_ratio(r.ratio)}", r.ours.median <= 1.0 and r.ratio <= 5.0


def _open_100k(res: Results) -> tuple[str, bool | None]:
    """In a kernel a model this big sends its outline first (`Explorer.outline_from`): the time
    to that first state is judged; the full state's time is shown beside it."""
    full = res.row("synthetic 100k", "open explorer (walk + first state)")
    first = res.row("synthetic 100k", "first rows (walk + outline)")
    size = res.values.get("bytes:first state, synthetic 100k", math.nan)
    if full is None or not full.ours.ok:
        return ("not measured" if full is None else _cell(full.ours), None)
    if first is None or not first.ours.ok:
        return f"full state {ms(full.ours.median)} (outline not measured)", None
    ok = first.ours.median <= 1.0 and size <= 256 * 1024
    text = f"outline {ms(first.ours.median)}; full state {ms(full.ours.median)}, {_kb(size)}"
    return text, ok


def _per_model(
    figure: str | tuple[str, ...], anchor: str, limit: float, models: tuple[str, ...] = ()
) -> Callable[[Results], tuple[str, bool | None]]:
    """Every row of `figure` (or figures) against `anchor` (only `models`, matched by name
    prefix, if given) must have a ratio <= `limit`."""
    figures = (figure,) if isinstance(figure, str) else figure

    def check(res: Results) -> tuple[str, bool | None]:
        rows = [r for r in res.rows if r.figure in figures and r.anchor_name == anchor]
        if models:
            rows = [r for r in rows if r.model.startswith(models)]
        rows = [r for r in rows if not math.isnan(r.ratio)]
        if not rows:
            return "not measured", None
        text = "; ".join(f"{r.model} {_ratio(r.ratio)}" for r in rows)
        return text, all(r.ratio <= limit for r in rows)

    return check


def overhead_ratio(ours: Timing, theirs: Timing, bare: Timing) -> float:
    """(ours - bare) / (theirs - bare): our overhead over a bare forward against theirs, run by run
    when the three were measured interleaved, else from the medians."""
    same = ours.group is not None and ours.group == theirs.group == bare.group
    if same and len(ours.runs) == len(theirs.runs) == len(bare.runs) and ours.runs:
        return statistics.median(
            (o - b) / (t - b) if t > b else math.inf
            for o, t, b in zip(ours.runs, theirs.runs, bare.runs)
        )
    if theirs.median <= bare.median:
        return math.inf
    return (ours.median - bare.median) / (theirs.median - bare.median)


def _real_synthetic(res: Results) -> tuple[str, bool | None]:
    model = "synthetic 10k"
    vs_bare = res.row(model, "probe (real)", "bare forward")
    vs_info = res.row(model, "probe (real)", "torchinfo.summary")
    if vs_bare is None or vs_info is None or vs_bare.anchor is None or vs_info.anchor is None:
        return "not measured", None
    if not (vs_bare.ours.ok and vs_bare.anchor.ok and vs_info.anchor.ok):
        return _cell(vs_bare.ours), None
    x = overhead_ratio(vs_bare.ours, vs_info.anchor, vs_bare.anchor)
    text = (
        f"overhead {ms(vs_bare.ours.median - vs_bare.anchor.median)} vs torchinfo's "
        f"{ms(vs_info.anchor.median - vs_bare.anchor.median)}: {_ratio(x)} "
        f"(probe {_ratio(vs_bare.ratio)} a bare forward)"
    )
    return text, x <= 1.0


def _edit_r50(res: Results) -> tuple[str, bool | None]:
    r = res.row("ResNet-50 (timm)", "edit + fake re-probe")
    if r is None or not r.ours.ok:
        return ("not measured" if r is None else _cell(r.ours)), None
    return ms(r.ours.median), r.ours.median <= 0.5


def _paint_100k(res: Results) -> tuple[str, bool | None]:
    paint = res.values.get("browser:first_paint_s:100000")
    rows = res.values.get("browser:dom_rows:100000")
    if paint is None:
        return "not measured (needs browser figures, see bench/README.md)", None
    ok = paint <= 0.5 and (rows is None or rows <= 250)
    return f"{ms(paint)}, {'?' if rows is None else int(rows)} DOM rows", ok


def _more_100k(res: Results) -> tuple[str, bool | None]:
    more = res.values.get("browser:more_page_s:100000")
    if more is None:
        return "not measured (needs browser figures, see bench/README.md)", None
    return ms(more), more <= 0.2


def _flow(
    key: str, models: tuple[str, ...], limit: float
) -> Callable[[Results], tuple[str, bool | None]]:
    """Browser flow figures (bench/flows.py) of `models`, each within `limit` seconds."""

    def check(res: Results) -> tuple[str, bool | None]:
        got = {m: res.values.get(f"flows:{key}:{m}") for m in models}
        if all(v is None for v in got.values()):
            return "not measured (python -m bench.flows)", None
        text = "; ".join(f"{m} {'not measured' if v is None else ms(v)}" for m, v in got.items())
        return text, all(v is not None and v <= limit for v in got.values())

    return check


def _memory_open(res: Results) -> tuple[str, bool | None]:
    held = res.values.get("flows:memory_held_bytes")
    left = res.values.get("flows:memory_after_close_bytes")
    if held is None or left is None:
        return "not measured (python -m bench.flows)", None
    mb = 1024 * 1024
    return f"{held / mb:.1f} MB held; {left / mb:.2f} MB left after close", left <= 0.01 * held


def _bundle(res: Results) -> tuple[str, bool | None]:
    size = res.values.get("bytes:widget.js (minified)")
    if size is None:
        return "not measured (bundle not built: `npm run build`)", None
    return _kb(size), size <= 150 * 1024


# The goals (bench/README.md). The real-probe row holds for models whose layers do real work; on
# the synthetic model of 10,000 width-8 layers (microseconds each) the probe's own Python cost per
# module cannot drop below torch's, so there it must cost no more than torchinfo's hooks do.
# "Llama": the CPU one here, and the GPU section's (bench/gpu.py), whose figure is "probe (real, CUDA)".
REAL_WORK = ("ResNet-50 (timm)", "ViT-B/16 (timm)", "Llama")
LLAMA_70B = "Llama-70B (transformers, meta)"

GOALS = (
    Goal("walk, 100k modules", "<= 1 s and <= 5x bare named_modules", _walk_100k),
    Goal("open explorer, 100k modules: its first state in a kernel (walk + outline)",
         "<= 1 s; state <= 256 KB", _open_100k),
    Goal(f"fake probe vs torchinfo.summary, {LLAMA_70B}, 1x128 tokens", "<= 0.5x",
         _per_model("probe (fake)", "torchinfo.summary", 0.5, (LLAMA_70B,))),
    Goal("fake probe vs torchinfo.summary, every model", "<= 0.5x",
         _per_model("probe (fake)", "torchinfo.summary", 0.5)),
    Goal("fake probe vs a bare meta forward, every meta model", "<= 1.0x",
         _per_model("probe (fake)", "bare meta forward", 1.0)),
    Goal("real probe vs bare forward, layers doing real work (ResNet-50, ViT-B/16, Llama CPU; "
         "the GPU Llama when measured)", "<= 1.3x",
         _per_model(("probe (real)", "probe (real, CUDA)"), "bare forward", 1.3, REAL_WORK)),
    Goal("real probe overhead vs torchinfo's overhead, synthetic 10k (width-8 layers)", "<= 1.0x",
         _real_synthetic),
    Goal("edit + fake re-probe, ResNet-50 (timm)", "<= 0.5 s", _edit_r50),
    Goal("tree first paint, 100k modules", "<= 0.5 s, <= ~200 DOM rows", _paint_100k),
    Goal('"more" on the tree, 100k modules (next 200 rows painted)', "<= 0.2 s", _more_100k),
    Goal("JS bundle without graph renderer", "<= 150 KB minified", _bundle),
    Goal("cell run -> tree visible, browser", "<= 1 s",
         _flow("tree_visible_s", ("synthetic 100k", LLAMA_70B), 1.0)),
    Goal("cell run -> probe shown (every row's shapes), browser, 100k modules", "<= 3 s",
         _flow("probe_shown_s", ("synthetic 100k",), 3.0)),
    Goal("Apply in the Form tab -> re-probed tree, browser", "<= 0.5 s",
         _flow("apply_s", ("ConvNeXt-T (timm)", "GPT-2, 4 layers (transformers)"), 0.5)),
    Goal("Apply in the Form tab -> re-probed tree, browser, 100k modules", "<= 3 s",
         _flow("apply_s", ("synthetic 100k",), 3.0)),
    Goal("memory of an open explorer, 100k modules", "reported; freed by close (<= 1% left)",
         _memory_open),
)  # fmt: skip


def goals_table(res: Results) -> str:
    out = ["### Goals", "", "| figure | goal | measured | result |", "|---|---|---|---|"]
    for g in GOALS:
        measured, ok = g.check(res)
        verdict = "not measured" if ok is None else ("pass" if ok else "**FAIL**")
        out.append(f"| {g.figure} | {g.goal} | {measured} | {verdict} |")
    return "\n".join(out) + "\n"


def _compact_ratio(res: Results, model: str, figure: str, anchors: tuple[str, ...]) -> str:
    for anchor in anchors:
        r = res.row(model, figure, anchor)
        if r is not None:
            if not r.ours.ok:
                return _cell(r.ours)
            return _ratio(r.ratio)
    return "–"


def probe_table(res: Results) -> str:
    """One line per probed model: every probe ratio, and the anchors' medians."""
    models = list(dict.fromkeys(r.model for r in res.rows if r.table == "Probe"))
    if not models:
        return ""
    bare = ("bare forward", "bare meta forward")
    out = [
        "| model | fake / torchinfo | fake / bare | real / bare | real, flops=True / bare | "
        "torchinfo / bare | bare forward |",
        "|---|---|---|---|---|---|---|",
    ]
    for m in models:
        anchor = next((r.anchor for r in res.rows if r.model == m and r.anchor_name in bare), None)
        meta = any(r.model == m and r.anchor_name == "bare meta forward" for r in res.rows)
        cells = [
            _compact_ratio(res, m, "probe (fake)", ("torchinfo.summary",)),
            _compact_ratio(res, m, "probe (fake)", bare),
            _compact_ratio(res, m, "probe (real)", bare),
            _compact_ratio(res, m, "probe (real), flops=True", bare),
            _compact_ratio(res, m, "(anchor) torchinfo.summary", bare),
            f"{_cell(anchor)}{' (meta)' if meta else ''}",
        ]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return (
        "### Probe, per model (each ratio: the median of run-by-run ratios, measured interleaved)\n\n"
        + "\n".join(out)
        + "\n"
    )


def probe_summary(res: Results) -> str:
    """What docs/benchmarks.md shows: the machine, the goals, the probe per model, walk and edit."""
    walk = Results(rows=[r for r in res.rows if r.table in ("Walk and open", "Edit")])
    parts = [f"Machine: {res.machine}\n", goals_table(res), probe_table(res), timing_tables(walk)]
    return "\n".join(p for p in parts if p)


def render(res: Results) -> str:
    parts = [f"## torchxray benchmarks\n\nMachine: {res.machine}\n", goals_table(res)]
    parts += [probe_table(res), timing_tables(res), size_table(res), *res.sections]
    if res.notes:
        parts.append("Notes:\n" + "\n".join(f"- {n}" for n in res.notes) + "\n")
    return "\n".join(p for p in parts if p)
