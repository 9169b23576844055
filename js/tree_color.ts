// Colours tree rows by a chosen figure (parameters, bytes, activations, FLOPs, time) as a share of
// the whole model's, with a legend. Values come lazily: only rows the tree renders are asked for,
// a batch at a time, and kept until the tree changes.
import { clear, formatBytes, formatCount, h } from "./dom";
import type { ExportState, FiguresReply, NodeRow } from "./protocol";
import { sparkline } from "./sparkline";

export const FIGURES = [
  ["params", "parameters"],
  ["bytes", "bytes"],
  ["activations", "activations (training)"],
  ["flops", "FLOPs"],
  ["time", "time (real probe)"],
  ["grad_norm", "gradient norm (training)"],
  ["update_ratio", "update ratio (training)"],
  ["act_std", "activation std (training)"],
  ["act_zeros", "activation zeros (training)"],
  ["drift", "drift (ONNX vs eager, Export tab)"],
] as const;
export type Figure = (typeof FIGURES)[number][0];
/** The figures ex.watch samples (asked for with "train_figures"; the others with "figures"). */
export const TRAIN_FIGURES = ["grad_norm", "update_ratio", "act_std", "act_zeros"] as const;
export type TrainFigure = (typeof TRAIN_FIGURES)[number];
export function isTrainFigure(f: string): f is TrainFigure {
  return (TRAIN_FIGURES as readonly string[]).includes(f);
}

/** Drift is an absolute figure, not a share of the model: its own scale (max abs, log). */
export const DRIFT_STOPS = [1e-8, 1e-6, 1e-4, 1e-2, 1];

/** A drift (max abs difference) -> a colour from blue (1e-8 or less) to red (1 or more). */
export function driftHeat(v: number): string {
  const t = v > 0 ? Math.min(1, Math.max(0, (Math.log10(v) + 8) / 8)) : 0;
  return `hsl(${Math.round(220 * (1 - t))} 80% 52%)`;
}

/** The drift values of the Export tab's last check, as a figures reply (no request: the
 * state has them); a module without one is "not known". */
export function driftFigures(s: Partial<ExportState>, paths: readonly string[]): FiguresReply {
  const drift = s.drift ?? {};
  const values: Record<string, number | null> = {};
  for (const p of paths) values[p] = drift[p]?.[0] ?? null;
  const n = Object.keys(drift).length;
  const note = n ? (s.stale ? "from the last export check, made before the last patch" : "") : "no drift measured: run the Export tab's check (real weights, eval mode)";
  return { kind: "figures", figure: "drift" as FiguresReply["figure"], values, total: null, note };
}

/** Shares shown in the legend; colours run on a log scale between the first and the last. */
export const STOPS = [0.0001, 0.001, 0.01, 0.1, 1];
const BATCH = 200;

/** A share of the model (0..1) -> a colour from blue (tiny) to red (all of it). */
export function heat(share: number): string {
  const t = share > 0 ? Math.min(1, Math.max(0, (Math.log10(share) + 4) / 4)) : 0;
  return `hsl(${Math.round(220 * (1 - t))} 80% 52%)`;
}

export function figureText(figure: Figure, v: number): string {
  if (figure === "bytes" || figure === "activations") return formatBytes(v);
  if (figure === "time") return `${v.toFixed(3)} ms`;
  if (figure === "act_zeros") return `${(100 * v).toFixed(1)}% zeros`;
  if (figure === "drift") return v === 0 ? "0 (max abs)" : `${v.toExponential(2)} (max abs)`;
  if (isTrainFigure(figure)) return v === 0 || (Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4) ? v.toPrecision(3) : v.toExponential(2);
  return formatCount(v);
}

function percent(share: number): string {
  const p = 100 * share;
  return p >= 1 || p === 0 ? `${Math.round(p)}%` : `${p.toPrecision(1)}%`;
}

export type FetchFigures = (figure: Figure, paths: string[]) => Promise<{ kind: string }>;

export class TreeColor {
  readonly el = h("div", { class: "tx-colorbar" });
  readonly select = h("select", { "aria-label": "colour the tree by" });
  private readonly legend = h("div", { class: "tx-legend", "aria-label": "colour legend" });
  private values = new Map<string, number | null>();
  // An attached job's rows (train_figures): the figure's last samples, and whose rank each is.
  private sparks = new Map<string, number[]>();
  private whose = new Map<string, number>();
  private total: number | null = null;
  private note = "";
  private pending = new Set<string>();
  private asked = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private generation = 0;

  constructor(
    private readonly fetch: FetchFigures,
    private readonly redraw: () => void,
    private readonly onError: (message: string) => void,
  ) {
    this.select.appendChild(h("option", { value: "" }, "nothing"));
    for (const [value, label] of FIGURES) this.select.appendChild(h("option", { value }, label));
    this.select.addEventListener("change", () => {
      this.reset();
      this.redraw();
    });
    this.el.append(h("label", {}, "colour by ", this.select), this.legend);
    this.legend.hidden = true;
  }

  get figure(): Figure | "" {
    return this.select.value as Figure | "";
  }

  /** Forget every value (the model or the figure changed); rows ask again when drawn. */
  reset(): void {
    this.generation += 1;
    this.values.clear();
    this.sparks.clear();
    this.whose.clear();
    this.asked.clear();
    this.pending.clear();
    this.total = null;
    this.note = "";
    this.drawLegend();
  }

  /** The figure's values moved on (a training step): rows ask again, keeping their colours until
   * the new values come (a reset would blank every row at each step, and a slow reply would be
   * dropped by the next step's reset before it could be drawn). */
  refresh(): void {
    if (!this.figure) return;
    this.asked.clear();
    this.redraw();
  }

  /** Called for each row the tree draws: a swatch before its name, or a request for its value. */
  paint(el: HTMLElement, item: NodeRow): void {
    const figure = this.figure;
    if (!figure) return;
    if (!this.asked.has(item.path)) this.queue(item.path);
    if (!this.values.has(item.path)) return;
    const v = this.values.get(item.path) ?? null;
    const share = v !== null && this.total ? v / this.total : null;
    const label = FIGURES.find(([f]) => f === figure)?.[1] ?? figure;
    const rank = this.whose.get(item.path);
    const of = rank === undefined ? "" : ` on rank ${rank}`;
    const title = v === null ? `${label}: not known` : `${label}${of}: ${figureText(figure, v)}${share !== null ? ` (${percent(share)} of the model)` : ""}`;
    const swatch = h("span", { class: "tx-heat", title, "aria-label": title });
    if (figure === "drift" && v !== null) swatch.style.background = driftHeat(v);
    else if (share !== null) swatch.style.background = heat(share);
    else swatch.classList.add("tx-heat-none");
    el.querySelector(".tx-name")?.before(swatch);
    const spark = this.sparks.get(item.path);
    if (spark) el.querySelector(".tx-name")?.after(sparkline(spark, isTrainFigure(figure) && figure !== "act_zeros", `${label}${of}, last ${spark.length} samples`));
  }

  private queue(path: string): void {
    this.pending.add(path);
    this.asked.add(path);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.load(), 30);
  }

  private async load(): Promise<void> {
    const figure = this.figure;
    const generation = this.generation;
    const paths = [...this.pending];
    this.pending.clear();
    if (!figure || !paths.length) return;
    for (let i = 0; i < paths.length; i += BATCH) {
      let r: FiguresReply;
      try {
        r = (await this.fetch(figure, paths.slice(i, i + BATCH))) as FiguresReply;
      } catch (e) {
        this.onError(e instanceof Error ? e.message : String(e));
        return;
      }
      if (generation !== this.generation) return; // the figure or the model changed meanwhile
      for (const [p, v] of Object.entries(r.values)) this.values.set(p, v);
      const extra = r as { spark?: Record<string, number[]>; ranks?: Record<string, number> };
      for (const [p, v] of Object.entries(extra.spark ?? {})) this.sparks.set(p, v);
      for (const [p, v] of Object.entries(extra.ranks ?? {})) this.whose.set(p, v);
      this.total = r.total;
      this.note = r.note;
    }
    this.drawLegend();
    this.redraw();
  }

  private drawLegend(): void {
    clear(this.legend);
    const figure = this.figure;
    this.legend.hidden = !figure;
    if (!figure) return;
    const label = FIGURES.find(([f]) => f === figure)?.[1] ?? figure;
    if (figure === "drift") {
      this.legend.append(`${label}: `);
      for (const s of DRIFT_STOPS) {
        const sw = h("span", { class: "tx-heat" });
        sw.style.background = driftHeat(s);
        this.legend.append(h("span", { class: "tx-stop" }, sw, s.toExponential(0)));
      }
      this.legend.append(h("span", { class: "tx-stop" }, h("span", { class: "tx-heat tx-heat-none" }), "not measured"));
      if (this.note) this.legend.append(h("div", { class: "tx-muted" }, this.note));
      return;
    }
    this.legend.append(`share of the model's ${label}: `);
    for (const s of STOPS) {
      const sw = h("span", { class: "tx-heat" });
      sw.style.background = heat(s);
      this.legend.append(h("span", { class: "tx-stop" }, sw, percent(s)));
    }
    this.legend.append(h("span", { class: "tx-stop" }, h("span", { class: "tx-heat tx-heat-none" }), "not known"));
    if (this.total !== null) this.legend.append(h("span", { class: "tx-muted" }, ` · model: ${figureText(figure, this.total)}`));
    if (this.note) this.legend.append(h("div", { class: "tx-muted" }, this.note));
  }
}
