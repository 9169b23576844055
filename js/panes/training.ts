// The Training tab: what ex.watch sees of a live training loop. The loss curve, Pause / Resume,
// the first non-finite module (selectable), the flags raised lately, and for the selected module
// sparklines of its gradient norm, update ratio and activation std and zeros. The state comes in
// the `training` traitlet while the loop runs (throttled by the kernel); a module's history is
// asked for when the tab shows it and again when the step moves on. Mirrors _view/tools_watch.py.
import { clear, h, SVG_NS, svgChart } from "../dom";
import type { TrainingState, TrainSeriesReply } from "../protocol";
import type { Ctx, Pane } from "./context";
import { messageOf } from "./context";
import { AttachPoller, attachedLine, rankSelect, rankTable } from "./training_attach";



/** The figures drawn per module: reply key, label, whether its scale is logarithmic. */
export const SERIES = [
  ["grad_norm", "gradient norm", true],
  ["update_ratio", "update ratio ‖Δw‖/‖w‖", true],
  ["act_std", "activation std", true],
  ["act_zeros", "activation zeros", false],
] as const;

const WORST = ["nonfinite", "exploding", "magnitude", "dead", "vanishing", "saturated"];

/** The tree's badges (tree_select.ts BADGES): each flagged row's worst flag, the first NaN. */
export function trainingBadges(s: Partial<TrainingState>): Record<string, string> {
  const badges: Record<string, string> = {};
  for (const [path, kinds] of Object.entries(s.active ?? {})) {
    const worst = WORST.find((k) => kinds.includes(k));
    if (worst) badges[path] = `t-${worst}`;
  }
  const nf = s.nonfinite;
  if (nf && nf.path !== null) badges[nf.path] = "first-nan";
  return badges;
}

/** When the tree's training colours are asked again: a new step, or an attached job's rank or
 * news ("" before any step). */
export function trainingMoment(s: Partial<TrainingState>): string {
  return s.step === undefined ? "" : `${s.step}/${s.attached?.rank}/${s.attached?.polls ?? ""}`;
}

export function short(x: number): string {
  const a = Math.abs(x);
  if (a === 0) return "0";
  if (a < 1e-3 || a >= 1e4) return x.toExponential(2);
  return x.toPrecision(3);
}

/** A polyline chart of (step, value) points, built with DOM calls (no markup parsed). */
export function lineChart(points: readonly (readonly [number, number])[], width: number, height: number, log: boolean, label: string): SVGSVGElement {
  const svg = svgChart("tx-line", width, height, label);
  const ys = points.map(([, v]) => (log ? Math.log10(Math.max(v, 1e-30)) : v));
  if (points.length) {
    const x0 = points[0][0];
    const x1 = points[points.length - 1][0];
    const lo = Math.min(...ys);
    const hi = Math.max(...ys);
    const sx = (s: number) => (x1 > x0 ? ((s - x0) / (x1 - x0)) * (width - 2) + 1 : width / 2);
    const sy = (y: number) => (hi > lo ? height - 1 - ((y - lo) / (hi - lo)) * (height - 2) : height / 2);
    const line = document.createElementNS(SVG_NS, "polyline");
    line.setAttribute("points", points.map(([s], i) => `${sx(s).toFixed(1)},${sy(ys[i]).toFixed(1)}`).join(" "));
    svg.appendChild(line);
    const dot = document.createElementNS(SVG_NS, "circle");
    dot.setAttribute("cx", sx(points[points.length - 1][0]).toFixed(1));
    dot.setAttribute("cy", sy(ys[ys.length - 1]).toFixed(1));
    dot.setAttribute("r", "2");
    svg.appendChild(dot);
  }
  return svg;
}

export class TrainingPane implements Pane {
  readonly el = h("div", { class: "tx-training" });
  private readonly head = h("div", { class: "tx-train-head" });
  private readonly pause = h("button", { type: "button", class: "tx-train-pause" }, "Pause");
  private readonly message = h("span", { class: "tx-muted", "aria-live": "polite" });
  private readonly banner = h("div", { class: "tx-train-nan", role: "alert", hidden: true });
  private readonly loss = h("div", { class: "tx-train-loss" });
  private readonly module = h("div", { class: "tx-train-module" });
  private readonly flags = h("div", { class: "tx-train-flags" });
  private seq = 0;
  private shownStep = -1;
  private shownPath: string | null = null;
  private shownRank: number | null | undefined = undefined;
  // An attached job's polls (tx.explore(..., attach=job)); idle for a loop in this kernel.
  readonly poller: AttachPoller;

  constructor(private readonly ctx: Ctx) {
    // Polls stop once the pane leaves the page (the view closed) or the widget is disposed.
    this.poller = new AttachPoller(ctx, (m) => {
      if (this.state().attached) this.message.textContent = m;
    }, () => this.el.isConnected);
    this.pause.addEventListener("click", () => void this.toggle());
    this.el.append(this.head, this.banner, this.loss, this.module, this.flags);
  }

  private state(): Partial<TrainingState> {
    return (this.ctx.model.get("training") ?? {}) as Partial<TrainingState>;
  }

  private async toggle(): Promise<void> {
    const action = this.state().paused ? "resume" : "pause";
    this.pause.disabled = true;
    this.message.textContent = action === "pause" ? "pausing at the end of this step…" : "resuming…";
    // While the loop runs, the kernel answers at the end of the step (or when the cell ends).
    const r = await this.ctx.run(`train_${action}`, () => this.ctx.rpc.call({ kind: "train_control", action }, 120_000));
    this.pause.disabled = false;
    if (r) this.message.textContent = r.message;
  }

  /** The training state changed (a step, a pause, a flag): redraw what does not need the kernel. */
  update(): void {
    const s = this.state();
    clear(this.head);
    this.poller.follow(s.attached);
    if (s.attached) {
      // A job that trains elsewhere: no Pause; which rank is shown; "job ended at step N".
      const a = s.attached;
      this.head.append(
        h("span", { class: a.ended ? "tx-train-closed tx-train-status" : "tx-train-status" }, attachedLine(a, s.step ?? 0, s.every ?? 0)),
        rankSelect(a, (rank) => this.poller.pick(rank)),
        this.message,
      );
      if (s.note) this.head.append(h("p", { class: "tx-muted" }, s.note));
    } else if (!s.watching) {
      // A closed watch: the kernel's note says so (and after how many steps); no Pause.
      const note = s.note || (s.step ? `the watch is closed after ${s.step} steps` : "no training loop is watched: w = ex.watch(optimizer) before the loop");
      this.head.append(h("p", { class: s.step ? "tx-train-closed" : "tx-muted" }, note));
    } else {
      this.pause.textContent = s.paused ? "Resume" : "Pause";
      this.pause.setAttribute("aria-pressed", String(Boolean(s.paused)));
      this.pause.disabled = this.ctx.readonly;
      const what = `step ${s.step} · sampled every ${s.every} · ${s.optimizer || "no optimizer"} · ${s.flag_count} flag${s.flag_count === 1 ? "" : "s"}`;
      this.head.append(h("span", { class: "tx-train-status" }, s.paused ? `paused after step ${s.step}` : what), this.pause, this.message);
      if (s.note) this.head.append(h("p", { class: "tx-muted" }, s.note));
    }
    this.drawBanner(s);
    this.drawLoss(s);
    this.drawFlags(s);
  }

  private drawBanner(s: Partial<TrainingState>): void {
    const nf = s.nonfinite;
    clear(this.banner);
    this.banner.hidden = !nf;
    if (!nf) return;
    const where = nf.path === null ? "outside the model" : nf.path || "(model)";
    const rank = nf.rank === undefined ? "" : `rank ${nf.rank}, `;
    this.banner.append(h("strong", {}, `First NaN/Inf: ${rank}step ${nf.step}, ${where}`), ` (${nf.phase}${nf.cls ? `, ${nf.cls}` : ""}): ${nf.detail}`);
    if (nf.path !== null) {
      const go = h("button", { type: "button", class: "tx-link" }, "Select it");
      go.addEventListener("click", () => this.ctx.select(nf.path ?? ""));
      this.banner.append(" ", go);
    }
  }

  private drawLoss(s: Partial<TrainingState>): void {
    clear(this.loss);
    const pts = s.loss ?? [];
    if (!pts.length) {
      if (s.watching) this.loss.append(h("p", { class: "tx-muted" }, "loss: pass it to w.step(loss) to draw the curve"));
      return;
    }
    const last = pts[pts.length - 1];
    this.loss.append(
      h("h4", {}, `loss ${short(last[1])} at step ${last[0]}`),
      lineChart(pts, 320, 72, false, `loss over ${pts.length} steps, last ${short(last[1])}`),
    );
  }

  private drawFlags(s: Partial<TrainingState>): void {
    clear(this.flags);
    const recent = s.recent ?? [];
    if (!recent.length) return;
    const list = h("ul", { class: "tx-train-flaglist", "aria-label": "flags raised" });
    for (const f of [...recent].reverse()) {
      const go = h("button", { type: "button", class: "tx-link" }, f.path || "(model)");
      go.addEventListener("click", () => this.ctx.select(f.path));
      // One record per module and kind: raised again, it is counted, not listed again.
      const rank = f.rank === undefined || !s.attached ? "" : `rank ${f.rank}, `;
      const when = f.count > 1 ? ` ${rank}${f.count} times since step ${f.step} (last ${f.last}) ` : ` ${rank}step ${f.step} `;
      list.append(h("li", {}, h("span", { class: `tx-badge tx-badge-${f.kind}` }, f.kind), when, go));
    }
    this.flags.append(h("h4", {}, `flags (${s.flag_count}, latest first)`), list);
  }

  async show(): Promise<void> {
    this.update();
    const s = this.state();
    const path = String(this.ctx.model.get("selected") ?? "");
    if (this.ctx.readonly || !s.watching && !s.step) {
      clear(this.module);
      return;
    }
    const rank = s.attached ? s.attached.rank : undefined;
    if (s.step === this.shownStep && path === this.shownPath && rank === this.shownRank) return;
    const seq = ++this.seq;
    let r: TrainSeriesReply;
    try {
      r = await this.ctx.rpc.call({ kind: "train_series", path });
    } catch (e) {
      if (seq === this.seq) this.module.replaceChildren(h("p", { class: "tx-muted" }, messageOf(e)));
      return;
    }
    if (seq !== this.seq) return;
    this.shownStep = s.step ?? -1;
    this.shownPath = path;
    this.shownRank = rank;
    this.drawModule(r);
  }

  private drawModule(r: TrainSeriesReply): void {
    clear(this.module);
    const title = `${r.path || "(model)"} · ${r.cls}${r.rank === undefined ? "" : ` · rank ${r.rank}`}`;
    this.module.append(h("h4", {}, title, ...r.flags.map((f) => h("span", { class: `tx-badge tx-badge-${f}` }, f))));
    const table = h("table", { class: "tx-table tx-train-series" });
    for (const [key, label, log] of SERIES) {
      const pts = r.series[key] ?? [];
      const last = r.latest[key];
      const cell = pts.length ? lineChart(pts, 140, 22, log, `${label} of ${r.path || "the model"} over ${pts.length} samples`) : h("span", { class: "tx-muted" }, key === "grad_norm" || key === "update_ratio" ? "no own weights" : "no sample yet");
      table.append(h("tr", {}, h("th", {}, label), h("td", {}, cell), h("td", { class: "tx-num" }, last === undefined ? "—" : short(last))));
    }
    this.module.append(table);
    if (r.ranks && r.ranks.length > 1) this.module.append(h("h4", {}, "every rank, last sample"), rankTable(r.ranks, r.rank));
  }

  /** The widget is gone: no more polls. */
  dispose(): void {
    this.poller.stop();
  }

  selectionChanged(): void {
    this.shownPath = null;
  }
}
